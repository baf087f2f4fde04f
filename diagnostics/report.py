"""Plain-text rendering of reports for the terminal: one glyph per status, the fix under each finding."""
from __future__ import annotations

import textwrap
from typing import Any

GLYPHS = {"ok": "[✓]", "warn": "[!]", "fail": "[✗]", "timeout": "[⏱]", "crashed": "[☠]", "skipped": "[-]"}
SEV_GLYPH = {"critical": "✗✗", "error": "✗", "warning": "!", "info": "i"}


def _fmt_value(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(map(str, v)) if v else "(none)"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) and v > 10 * 1024 * 1024:
        return f"{v} ({v / (1024 ** 3):.1f} GiB)"
    return str(v)


def render_facts(facts: dict[str, Any]) -> str:
    if not facts:
        return "  (no facts established)"
    w = max(len(k) for k in facts)
    return "\n".join(f"  {k:<{w}}  {_fmt_value(v)}" for k, v in sorted(facts.items()))


def _indent(text: str, n: int) -> str:
    return textwrap.indent(text.strip(), " " * n)


def render_diagnoses(diagnoses: list[dict[str, Any]], not_ruled_out: list[dict[str, Any]] | None = None) -> str:
    out: list[str] = []
    real = [d for d in diagnoses if not d.get("benign")]
    benign = [d for d in diagnoses if d.get("benign")]
    if not real:
        out.append("No known problem matched.")
    for d in real:
        out.append(f"{d.get('rank', '?')}. [{SEV_GLYPH.get(d['severity'], '?')} {d['severity']}] {d['title']}  "
                   f"({d['id']}, confidence {d['confidence']:.2f})")
        if d.get("consequence_of"):
            out.append(f"   probably a consequence of: {', '.join(d['consequence_of'])}")
        for e in d.get("evidence", [])[:6]:
            where = e.get("source", "")
            if e.get("line"):
                where += f":{e['line']}"
            out.append(f"   • {where}: {e.get('excerpt', '')}")
        out.append("   Fix:")
        out.append(_indent(d.get("fix", ""), 5))
        out.append("")
    if benign:
        out.append("Harmless messages seen (information only):")
        for d in benign:
            out.append(f"   i {d['title']} ({d['id']})")
        out.append("")
    if not_ruled_out:
        out.append("Not ruled out (a check could not run):")
        for d in not_ruled_out:
            out.append(f"   ? {d['title']} ({d['id']}): {d['reason']}")
    return "\n".join(out).rstrip() + "\n"


def render_match(res: dict[str, Any]) -> str:
    out = []
    for p in res.get("parsed", []):
        out.append(f"Read {p['name']} as {p['kind']} ({len(p['facts'])} facts)")
    for n in res.get("notes", []):
        out.append(f"note: {n}")
    if out:
        out.append("")
    out.append(render_diagnoses(res.get("diagnoses", []), res.get("not_ruled_out")))
    return "\n".join(out)


def render_report(report: dict[str, Any]) -> str:
    out = [f"GPU doctor report  {report.get('created_at', '')}  session {report.get('session_id', '')}", ""]
    out.append("Checks:")
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
            out.append(f"Test generation: {gen.get('new_tokens')} tokens on {gen.get('device')} at "
                       f"{gen.get('tokens_per_s', 0):.1f} tokens/s (load {gen.get('load_s', 0):.1f}s)")
        else:
            out.append(f"Test generation: {gen.get('status', 'failed')} — {gen.get('error', '')}")
        mon = gen.get("monitor") or {}
        if mon.get("summary"):
            out.append(f"GPU while generating: {mon['summary']}")
    out.append("")
    out.append("Diagnosis:")
    out.append(render_diagnoses(report.get("diagnoses", []), report.get("not_ruled_out")))
    return "\n".join(out)
