"""Plain-text rendering of reports for the terminal: one glyph per status, the fix under each finding."""
from __future__ import annotations

import textwrap
from typing import Any

from .i18n import t

GLYPHS = {"ok": "[✓]", "warn": "[!]", "fail": "[✗]", "timeout": "[⏱]", "crashed": "[☠]", "skipped": "[-]"}
SEV_GLYPH = {"critical": "✗✗", "error": "✗", "warning": "!", "info": "i"}


def _fmt_value(v: Any, lang: str = "en") -> str:
    if isinstance(v, list):
        return ", ".join(map(str, v)) if v else t("value.none", lang)
    if isinstance(v, bool):
        return t("value.yes", lang) if v else t("value.no", lang)
    if isinstance(v, int) and v > 10 * 1024 * 1024:
        return t("value.gib", lang, value=v, gib=v / (1024 ** 3))
    return str(v)


def render_facts(facts: dict[str, Any], lang: str = "en") -> str:
    if not facts:
        return "  " + t("report.no_facts", lang)
    w = max(len(k) for k in facts)
    return "\n".join(f"  {k:<{w}}  {_fmt_value(v, lang)}" for k, v in sorted(facts.items()))


def _indent(text: str, n: int) -> str:
    return textwrap.indent(text.strip(), " " * n)


def render_diagnoses(diagnoses: list[dict[str, Any]], not_ruled_out: list[dict[str, Any]] | None = None,
                     lang: str = "en") -> str:
    out: list[str] = []
    real = [d for d in diagnoses if not d.get("benign")]
    benign = [d for d in diagnoses if d.get("benign")]
    if not real:
        out.append(t("report.no_match", lang))
    for d in real:
        out.append(t("report.diagnosis_line", lang, rank=d.get("rank", "?"), glyph=SEV_GLYPH.get(d["severity"], "?"),
                     severity=t(f"severity.{d['severity']}", lang), title=d["title"], id=d["id"],
                     confidence=d["confidence"]))
        if d.get("consequence_of"):
            out.append("   " + t("report.consequence_of", lang, causes=", ".join(d["consequence_of"])))
        for e in d.get("evidence", [])[:6]:
            where = e.get("source", "")
            if e.get("line"):
                where += f":{e['line']}"
            out.append(f"   • {where}: {e.get('excerpt', '')}")
        out.append("   " + t("report.fix", lang))
        out.append(_indent(d.get("fix", ""), 5))
        out.append("")
    if benign:
        out.append(t("report.benign_header", lang))
        for d in benign:
            out.append(f"   i {d['title']} ({d['id']})")
        out.append("")
    if not_ruled_out:
        out.append(t("report.not_ruled_out_header", lang))
        for d in not_ruled_out:
            out.append(f"   ? {d['title']} ({d['id']}): {d['reason']}")
    return "\n".join(out).rstrip() + "\n"


def render_match(res: dict[str, Any], lang: str = "en") -> str:
    out = []
    for p in res.get("parsed", []):
        out.append(t("report.parsed", lang, name=p["name"], kind=p["kind"], count=len(p["facts"])))
    for n in res.get("notes", []):
        out.append(t("report.note", lang, note=n))
    if out:
        out.append("")
    out.append(render_diagnoses(res.get("diagnoses", []), res.get("not_ruled_out"), lang))
    return "\n".join(out)


def render_report(report: dict[str, Any], lang: str = "en") -> str:
    out = [t("report.title", lang, created_at=report.get("created_at", ""), session_id=report.get("session_id", "")), ""]
    out.append(t("report.checks", lang))
    for p in report.get("probes", []):
        g = GLYPHS.get(p.get("status"), "[?]")
        line = f"{g} {p.get('title') or p.get('id')}  ({p.get('duration_s', 0):.1f}s)"
        if p.get("summary"):
            line += f" — {p['summary']}"
        out.append(line)
        if p.get("error"):
            out.append(_indent(str(p["error"]), 6))
    gen = report.get("generation")
    if gen:
        out.append("")
        if gen.get("status") == "ok" or gen.get("tokens_per_s"):
            out.append(t("report.generation_ok", lang, new_tokens=gen.get("new_tokens"), device=gen.get("device"),
                         tokens_per_s=gen.get("tokens_per_s", 0), load_s=gen.get("load_s", 0)))
        else:
            out.append(t("report.generation_failed", lang, status=gen.get("status") or t("report.generation_status_failed", lang),
                         error=gen.get("error", "")))
        mon = gen.get("monitor") or {}
        if mon.get("summary"):
            out.append(f"GPU while generating: {mon['summary']}")
    out.append("")
    out.append(t("report.diagnosis", lang))
    out.append(render_diagnoses(report.get("diagnoses", []), report.get("not_ruled_out"), lang))
    return "\n".join(out)
