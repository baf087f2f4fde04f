"""Shared rendering of reports (used by the Diagnose and Sessions pages).  No logic beyond layout.

Every string that came from the machine, a log, a session or a KB entry goes out through ui.safe (escaped
HTML, sanitised Markdown) or st.code / st.text / st.dataframe, which show text as text.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui import safe

# Material icons ship with Streamlit (no emoji font needed on the viewer's machine); colour and word say the same
STATUS_GLYPH = {"ok": ":green[:material/check_circle:]", "warn": ":orange[:material/warning:]",
                "fail": ":red[:material/cancel:]", "timeout": ":violet[:material/timer_off:]",
                "crashed": ":red[:material/dangerous:]", "skipped": ":gray[:material/do_not_disturb_on:]",
                "running": ":blue[:material/progress_activity:]"}
STATUS_WORD = {"ok": "passed", "warn": "warning", "fail": "failed", "timeout": "timed out", "crashed": "crashed",
               "skipped": "skipped", "running": "running"}
SEV_GLYPH = {"critical": ":red[:material/report:]", "error": ":red[:material/error:]",
             "warning": ":orange[:material/warning:]", "info": ":blue[:material/info:]"}
SEV_WORD = {"critical": "critical", "error": "error", "warning": "warning", "info": "information"}
VERDICT_WORD = {"problems": "problems found", "incomplete": "incomplete", "healthy": "no known problem"}


def fmt_value(v: Any) -> str:
    if v is None:
        return "(unknown)"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(map(str, v)) if v else "(none)"
    if isinstance(v, int) and v >= 1 << 24:
        return f"{v / (1 << 30):.2f} GiB"
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    return str(v)


def status_table(rows: list[tuple[str | None, str, str, float | None]]) -> None:
    """The board of checks: one icon per status, the check, what it found, how long it took.

    A Markdown table (every cell escaped) rather than a data grid: screen readers and find-in-page see it."""
    out = ["| | Check | Result | Details | Time |", "|---|---|---|---|---:|"]
    for status, title, details, dur in rows:
        t = f"{float(dur):.1f}\u00a0s" if isinstance(dur, (int, float)) else ""
        out.append(f"| {STATUS_GLYPH.get(status or '', ':gray[:material/help:]')} | {safe.md_inline(title, 80)} | "
                   f"{STATUS_WORD.get(status or '', safe.md_inline(status))} | {safe.md_inline(details, 160)} | {t} |")
    st.markdown("\n".join(out))


def legend() -> None:
    st.caption("  ".join(f"{STATUS_GLYPH[k]} {STATUS_WORD[k]}" for k in ("ok", "warn", "fail", "timeout", "crashed",
                                                                          "skipped")))


def probe_board(probes: list[dict[str, Any]]) -> None:
    st.subheader("Checks")
    counts: dict[str, int] = {}
    for p in probes:
        counts[p.get("status")] = counts.get(p.get("status"), 0) + 1
    st.markdown(" · ".join(f"{STATUS_GLYPH.get(k, '?')} {n} {STATUS_WORD.get(k, safe.md_inline(k))}"
                          for k, n in counts.items()))
    status_table([(p.get("status"), p.get("title") or p.get("id"), p.get("summary") or p.get("error") or "",
                   p.get("duration_s")) for p in probes])
    troubled = [p for p in probes if p.get("status") in ("fail", "warn", "timeout", "crashed") and
                (p.get("error") or p.get("evidence") or p.get("output_tail"))]
    if troubled:
        with st.expander(f"What the {len(troubled)} check(s) that did not pass saw"):
            for p in troubled:
                st.markdown(f"**{STATUS_GLYPH.get(p.get('status'), '?')} {safe.md_inline(p.get('title') or p.get('id'))}**"
                            f" — {STATUS_WORD.get(p.get('status'), '')}")
                lines = []
                if p.get("error"):
                    lines.append(str(p["error"]))
                for e in (p.get("evidence") or [])[:8]:
                    lines.append(f"{e.get('source', '')}: {e.get('excerpt', '')}")
                if p.get("status") in ("crashed", "timeout") and p.get("output_tail"):
                    lines.append("last output:\n" + str(p["output_tail"])[-2000:])
                st.code("\n".join(lines), language=None, wrap_lines=True)


def _kb_patterns() -> dict[str, list[Any]]:
    """Compiled log patterns per KB entry id, for highlighting evidence lines."""
    try:
        import re2

        from diagnostics.service import get_kb

        kb, _ = get_kb()
    except Exception:
        return {}
    out: dict[str, list[Any]] = {}
    for e in kb.entries:
        pats = []
        for p in e.when.log_patterns():
            try:
                pats.append(re2.compile(p))
            except Exception:
                continue
        out[e.id] = pats
    return out


def evidence_html(e: dict[str, Any], patterns: list[Any]) -> str:
    """One evidence line as escaped HTML: where it came from, then the text with the matching part marked."""
    where = str(e.get("source", ""))
    if e.get("line"):
        where += f":{e['line']}"
    text = str(e.get("excerpt", ""))
    spans: list[tuple[int, int]] = []
    if e.get("kind") == "fact" or (e.get("fact") and " = " in text):
        i = text.find(" = ")
        if i > 0:
            spans.append((i + 3, len(text)))
    else:
        for rx in patterns:
            try:
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        spans.append((m.start(), m.end()))
            except Exception:
                continue
    kind = "fact" if e.get("kind") == "fact" else "log"
    return (f'<div class="gd-ev"><span class="gd-src">{safe.esc(where)} ({kind})</span>\n'
            f"{safe.highlight(text, spans)}</div>")


def diagnosis_card(d: dict[str, Any], patterns: dict[str, list[Any]], expanded: bool = False) -> None:
    glyph = SEV_GLYPH.get(d.get("severity"), "")
    label = (f"{glyph} {safe.md_inline(d.get('title'))}  ·  {SEV_WORD.get(d.get('severity'), '')}  ·  "
             f"confidence {float(d.get('confidence') or 0):.0%}")
    with st.expander(label, expanded=expanded):
        if d.get("consequence_of"):
            st.caption("Probably a consequence of: " + ", ".join(safe.md_inline(x) for x in d["consequence_of"]))
        ev = d.get("evidence") or []
        if ev:
            st.markdown("**Evidence**")
            st.markdown("".join(evidence_html(e, patterns.get(str(d.get("id")), [])) for e in ev[:12]),
                        unsafe_allow_html=True)
        st.markdown("**How to fix it**")
        st.markdown(safe.md_html(d.get("fix") or "(no fix recorded)"), unsafe_allow_html=True)
        if d.get("cause"):
            st.markdown("**Why this happens**")
            st.markdown(safe.md_html(d["cause"]), unsafe_allow_html=True)
        links = [u for u in (d.get("links") or []) if isinstance(u, str) and u.startswith(("http://", "https://"))]
        if links:
            st.markdown("**Sources**")
            st.markdown(safe.md_html("\n".join(f"- <{u}>" for u in links)), unsafe_allow_html=True)
        st.caption(f"Knowledge-base entry: {safe.md_inline(d.get('id'))}")


def diagnoses(report: dict[str, Any]) -> None:
    ds = report.get("diagnoses") or []
    real = [d for d in ds if not d.get("benign")]
    benign = [d for d in ds if d.get("benign")]
    st.subheader("Likely causes, most likely first")
    patterns = _kb_patterns() if ds else {}
    if not real:
        st.success("No known problem matched.")
    for i, d in enumerate(real):
        diagnosis_card(d, patterns, expanded=(i == 0))
    if benign:
        with st.expander(f"{len(benign)} harmless message(s) seen (information only)", icon=":material/info:"):
            for d in benign:
                st.markdown(f"- **{safe.md_inline(d.get('title'))}** ({safe.md_inline(d.get('id'))})")
                ev = d.get("evidence") or []
                if ev:
                    st.markdown("".join(evidence_html(e, patterns.get(str(d.get("id")), [])) for e in ev[:3]),
                                unsafe_allow_html=True)
    nro = report.get("not_ruled_out") or []
    if nro:
        with st.expander(f"{len(nro)} cause(s) not ruled out (a check could not run)", icon=":material/help:"):
            for d in nro:
                st.markdown(f"- **{safe.md_inline(d.get('title'))}**: {safe.md_inline(d.get('reason'))}")


def facts_table(facts: dict[str, Any]) -> None:
    try:
        from diagnostics.facts import CATALOGUE
    except Exception:
        CATALOGUE = {}
    rows = [{"fact": k, "value": safe.short(fmt_value(v), 300),
             "meaning": (CATALOGUE.get(k) or ("", ""))[1]} for k, v in sorted(facts.items())]
    st.dataframe(rows, hide_index=True, width="stretch")


def token_curve(gen: dict[str, Any], prefix: str = "") -> list[tuple[float, int]]:
    """(seconds since the generation started, tokens so far) from the generation figures.

    Uses the measured per-token times when the report has them (``token_times``), else the measured time to
    the first token and the decode rate (the curve a steady decoder draws)."""
    times = gen.get(prefix + "token_times")
    if isinstance(times, list) and times and all(isinstance(t, (int, float)) for t in times):
        return [(0.0, 0)] + [(float(t), i + 1) for i, t in enumerate(times)]
    n = gen.get("new_tokens")
    ttft = gen.get(prefix + "ttft_s")
    rate = gen.get("decode_tokens_per_s" if not prefix else prefix + "decode_tokens_per_s") or gen.get(prefix + "tokens_per_s")
    if not isinstance(n, int) or n <= 0 or not isinstance(ttft, (int, float)) or not isinstance(rate, (int, float)) \
            or rate <= 0:
        return []
    return [(0.0, 0)] + [(float(ttft) + (k - 1) / float(rate), k) for k in range(1, n + 1)]


def generation(gen: dict[str, Any]) -> None:
    st.subheader("Test generation")
    status = gen.get("status")
    if not gen.get("tokens_per_s"):
        word = {"skipped": "was skipped", "timeout": "timed out", "crashed": "crashed", "fail": "failed"}.get(
            str(status), "did not produce figures")
        st.warning(f"The test generation {word}.")
        if gen.get("error"):
            st.code(str(gen["error"]), language=None, wrap_lines=True)
        return
    dev = str(gen.get("device") or "?")
    st.caption(f"Model {safe.md_inline(gen.get('model'))}, ran on {safe.md_inline(dev)}"
               f"{', ' + safe.md_inline(gen.get('dtype')) if gen.get('dtype') else ''}.")
    c = st.columns(5)
    c[0].metric("Device", dev.upper() if dev in ("cpu", "cuda") else dev,
                help="cuda also means a ROCm GPU: PyTorch calls both 'cuda'")
    c[1].metric("Tokens per second", f"{gen.get('tokens_per_s', 0):.1f}")
    c[2].metric("Time to first token", f"{gen.get('ttft_s') or 0:.3f} s")
    c[3].metric("Model load", f"{gen.get('load_s') or 0:.2f} s")
    rss = gen.get("peak_rss_bytes")
    c[4].metric("Peak memory (host)", f"{rss / (1 << 20):.0f} MiB" if isinstance(rss, (int, float)) else "n/a")
    for w in gen.get("warnings") or []:
        st.warning(str(w))
    curves = {f"on the {dev.upper() if dev == 'cpu' else 'GPU'}": token_curve(gen)}
    if gen.get("cpu_tokens_per_s"):
        cpu = token_curve({"new_tokens": gen.get("new_tokens"), "ttft_s": gen.get("cpu_ttft_s"),
                           "tokens_per_s": gen.get("cpu_tokens_per_s"), "token_times": gen.get("cpu_token_times")})
        curves["on the CPU"] = cpu
    curves = {k: v for k, v in curves.items() if v}
    if curves:
        rows = [{"seconds": t, "tokens": n, "run": name} for name, pts in curves.items() for t, n in pts]
        compare = bool(gen.get("cpu_tokens_per_s"))
        left, right = st.columns([3, 2] if compare else [3, 1])
        with left:
            st.markdown("**Tokens generated over time**")
            st.line_chart(rows, x="seconds", y="tokens", color="run", height=240)
            if not gen.get("token_times"):
                st.caption("Drawn from the measured time to first token and decode rate.")
        with right:
            if compare:
                st.markdown("**Speed, GPU against CPU**")
                bars = [{"run": "GPU", "tokens per second": float(gen["tokens_per_s"])},
                        {"run": "CPU", "tokens per second": float(gen["cpu_tokens_per_s"])}]
                st.bar_chart(bars, x="run", y="tokens per second", height=200, horizontal=True)
                if gen.get("gpu_vs_cpu_ratio"):
                    st.caption(f"The GPU generated {float(gen['gpu_vs_cpu_ratio']):.2f}× as fast as the CPU.")
            elif dev == "cpu":
                st.info("The model ran on the CPU: this interpreter's torch has no usable GPU, so there is no GPU "
                        "figure to compare.", icon=":material/info:")
            elif gen.get("cpu_compare_skipped"):
                st.caption("CPU comparison skipped: " + safe.md_inline(gen["cpu_compare_skipped"]))
    if gen.get("text"):
        with st.expander("Generated text"):
            st.text(str(gen["text"])[:4000])


def headline(rep: dict[str, Any]) -> None:
    verdict = rep.get("verdict")
    if verdict is None:
        from diagnostics.service import verdict as _v

        verdict = _v(rep)
    if verdict == "problems":
        top = next((d for d in rep.get("diagnoses") or [] if not d.get("benign")), None)
        st.error("**Problem found:** " + (safe.md_inline(top.get("title")) if top else "see below"), icon=":material/report:")
    elif verdict == "incomplete":
        st.warning("Some checks crashed or timed out; the diagnosis may be incomplete.", icon=":material/warning:")
    else:
        st.success("No known problem found.", icon=":material/check_circle:")


def logs(rep: dict[str, Any]) -> None:
    lg = rep.get("logs") or []
    if lg:
        with st.expander(f"Pasted logs and dumps ({len(lg)})"):
            for item in lg:
                st.caption(safe.md_inline(item.get("name") or "log"))
                st.code(str(item.get("text") or "")[:20000], language=None, wrap_lines=True)


def removed_table(replacements: list[dict[str, Any]], identity: dict[str, int] | None = None) -> None:
    """What redaction takes out of a shared report: the kind and the place of each secret, never its value."""
    rows = [{"replaced by": str(r.get("placeholder", "")), "what": str(r.get("kind", "")),
             "where": ", ".join(map(str, r.get("where") or []))[:300]} for r in replacements or []]
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    else:
        st.caption("No secret found in it.")
    hits = {k: v for k, v in (identity or {}).items() if v}
    if hits:
        st.caption("Identity masked: " + ", ".join(f"{safe.md_inline(k)} × {v}" for k, v in hits.items()))


def report(rep: dict[str, Any], show_headline: bool = True) -> None:
    if show_headline:
        headline(rep)
    diagnoses(rep)
    if rep.get("probes"):
        probe_board(rep["probes"])
        legend()
    gen = rep.get("generation")
    if gen:
        generation(gen)
    parsed = rep.get("parsed") or []
    if parsed:
        st.caption("Read: " + "; ".join(f"{safe.md_inline(p.get('name'))} as {safe.md_inline(p.get('kind'))} "
                                         f"({len(p.get('facts') or {})} facts)" for p in parsed))
    notes = [str(n) for n in (rep.get("notes") or []) if n]
    if notes:
        with st.expander(f"{len(notes)} note(s) about the input", icon=":material/sticky_note_2:"):
            st.code("\n".join(notes), language=None, wrap_lines=True)
    logs(rep)
    with st.expander(f"All facts ({len(rep.get('facts') or {})})"):
        facts_table(rep.get("facts") or {})
