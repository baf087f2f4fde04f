"""Plain-text rendering of reports for the terminal: one glyph per status, the fix under each finding."""
from __future__ import annotations

import textwrap
from typing import Any

from .i18n import t
from .i18n.probe_text import localize_report

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


def _confirmed(d: dict[str, Any]) -> bool:
    from .verdicts import is_confirmed

    return is_confirmed(d)


def render_diagnoses(diagnoses: list[dict[str, Any]], not_ruled_out: list[dict[str, Any]] | None = None,
                     lang: str = "en", possible: list[dict[str, Any]] | None = None) -> str:
    """Causes with evidence and fix, best first; what follows from them (``consequence_of``) only named under
    them (their fixes would repeat or contradict the cause's); guesses apart; benign messages last."""
    out: list[str] = []
    real = [d for d in diagnoses if not d.get("benign") and _confirmed(d)]
    causes = [d for d in real if not d.get("consequence_of")]
    consequences = [d for d in real if d.get("consequence_of")]
    possible = [d for d in diagnoses if not d.get("benign") and not _confirmed(d)] + list(possible or [])
    benign = [d for d in diagnoses if d.get("benign")]
    if not real:  # guesses are not a finding, nor an all-clear: say which it is
        out.append(t("report.no_confirmed_possible" if possible else "report.no_match", lang))
    for d in causes:
        out.append(t("report.diagnosis_line", lang, rank=d.get("rank", "?"), glyph=SEV_GLYPH.get(d["severity"], "?"),
                     severity=t(f"severity.{d['severity']}", lang), title=d["title"], id=d["id"],
                     confidence=d["confidence"]))
        for e in d.get("evidence", [])[:6]:
            where = e.get("source", "")
            if e.get("line"):
                where += f":{e['line']}"
            out.append(f"   • {where}: {e.get('excerpt', '')}")
        out.append("   " + t("report.fix", lang))
        out.append(_indent(d.get("fix", ""), 5))
        out.append("")
    if consequences:
        out.append(t("report.consequences_header", lang))
        for d in consequences:
            out.append(t("report.consequence_line", lang, title=d["title"], id=d["id"],
                         causes=", ".join(d["consequence_of"])))
        out.append("")
    if possible:
        out.append(t("report.possible_header", lang))
        for d in possible:
            ev = "; ".join(str(e.get("excerpt", "")) for e in (d.get("evidence") or [])[:2])
            out.append(f"   ? {d['title']} ({d['id']})" + (f": {ev}" if ev else ""))
            if d.get("root_of"):
                out.append("     " + t("report.possible_root_of", lang, id=d["root_of"]))
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
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_verdict(report: dict[str, Any], lang: str = "en") -> str:
    """The headline: the verdict, and the root causes by name."""
    from .verdicts import compute

    v = compute(report)
    if v == "problems":
        titles = {d.get("id"): d.get("title") for d in report.get("diagnoses") or [] if isinstance(d, dict)}
        roots = report.get("root_causes") or []
        causes = "; ".join(f"{titles.get(r) or r} ({r})" for r in roots) or "-"
        return t("report.verdict_problems", lang, causes=causes)
    if v == "healthy" and not report.get("probes"):
        # text alone (match --log / --describe): no check ran, so "every check passed" would claim too much
        return t("report.verdict_text_possible" if report.get("possible") else "report.verdict_text_nothing", lang)
    return t(f"report.verdict_{v}", lang)


def render_unexplained(report: dict[str, Any], lang: str = "en") -> str:
    """Failed checks no cause explains: the check, its output (signal named, last lines), the nearest KB entries,
    and how to start a KB entry from it."""
    from .verdicts import compute

    items = report.get("unexplained") or []
    if not items:
        return ""
    header = "report.unexplained_header" if compute(report) == "unexplained" else "report.unexplained_also_header"
    out = [t(header, lang)]
    for c in items:
        out.append(t("report.unexplained_check", lang, status=c.get("status"), title=c.get("title") or c.get("id"),
                     summary=c.get("summary") or c.get("error") or ""))
        if c.get("signal"):
            out.append(t("report.unexplained_signal", lang, signal=c["signal"]))
        if c.get("output"):
            out.append(t("report.unexplained_output", lang))
            out.append(_indent("\n".join(str(c["output"]).splitlines()[-8:]), 7))
        near = c.get("nearest") or []
        if near:
            out.append(t("report.unexplained_nearest", lang,
                         entries="; ".join(f"{n.get('title')} ({n.get('id')})" for n in near)))
        else:
            out.append(t("report.unexplained_none_near", lang))
        if c.get("new_entry"):
            out.append(t("report.unexplained_new_entry", lang, how=c["new_entry"]))
    return "\n".join(out) + "\n"


def render_match(res: dict[str, Any], lang: str = "en") -> str:
    res = localize_report(res, lang)  # probe-authored English sentences, at render time (stored text stays English)
    out = []
    for p in res.get("parsed", []):
        out.append(t("report.parsed", lang, name=p["name"], kind=p["kind"], count=len(p["facts"])))
    for n in res.get("notes", []):
        out.append(t("report.note", lang, note=n))
    if out:
        out.append("")
    if "verdict" in res:
        out.append(render_verdict(res, lang))
        out.append("")
    out.append(render_diagnoses(res.get("diagnoses", []), res.get("not_ruled_out"), lang, res.get("possible")))
    unexplained = render_unexplained(res, lang)
    if unexplained:
        out.append(unexplained)
    return "\n".join(out)


def render_report(report: dict[str, Any], lang: str = "en") -> str:
    report = localize_report(report, lang)
    out = [t("report.title", lang, created_at=report.get("created_at", ""), session_id=report.get("session_id", "")), ""]
    if report.get("stopped"):
        out += [t("report.stopped", lang), ""]
    out += [render_verdict(report, lang), ""]
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
            out.append(t("report.gpu_while_generating", lang, summary=mon["summary"]))
    out.append("")
    out.append(t("report.diagnosis", lang))
    out.append(render_diagnoses(report.get("diagnoses", []), report.get("not_ruled_out"), lang))
    unexplained = render_unexplained(report, lang)
    if unexplained:
        out.append(unexplained)
    return "\n".join(out)
