"""Shared rendering of reports (used by the Diagnose and Sessions pages).  No logic beyond layout.

Every string that came from the machine, a log, a session or a KB entry goes out through ui.safe (escaped
HTML, sanitised Markdown) or st.code / st.text / st.dataframe, which show text as text.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from diagnostics.i18n import t
from ui import safe
from ui.common import T, lang

# Material icons ship with Streamlit (no emoji font needed on the viewer's machine); colour and word say the same
STATUS_GLYPH = {"ok": ":green[:material/check_circle:]", "warn": ":orange[:material/warning:]",
                "fail": ":red[:material/cancel:]", "timeout": ":violet[:material/timer_off:]",
                "crashed": ":red[:material/dangerous:]", "skipped": ":gray[:material/do_not_disturb_on:]",
                "running": ":blue[:material/progress_activity:]"}
# the word for each state, from the message catalogue (status.*)
STATUS_KEY = {"ok": "status.passed", "warn": "status.warn", "fail": "status.fail", "timeout": "status.timeout",
              "crashed": "status.crashed", "skipped": "status.skipped", "running": "status.running"}
SEV_GLYPH = {"critical": ":red[:material/report:]", "error": ":red[:material/error:]",
             "warning": ":orange[:material/warning:]", "info": ":blue[:material/info:]"}
PASTED = t("ui.render.source_pasted", "en")  # the name a pasted text is stored under (any language shows it translated)
DESCRIPTION = t("report.source_description", "en")  # the source of evidence the symptom lexicon found
SEVERITIES = ("critical", "error", "warning", "info")
VERDICTS = ("problems", "unexplained", "incomplete", "healthy")


def status_word(status: str | None, default: str | None = None) -> str:
    """The word for a check state in the visitor's language (*default*, else the state itself, when unknown)."""
    key = STATUS_KEY.get(status or "")
    return T(key) if key else (default if default is not None else str(status or ""))


def sev_word(sev: str | None) -> str:
    return T(f"severity_word.{sev}") if sev in SEVERITIES else str(sev or "")


def verdict_word(verdict: str | None) -> str:
    return T(f"verdict.{verdict}") if verdict in VERDICTS else str(verdict or "")


def source_name(name: Any) -> str:
    """The name of a log source for the screen: the pasted text in the visitor's language, other names as given."""
    if name == PASTED:
        return T("ui.render.source_pasted")
    if name == DESCRIPTION:
        return T("report.source_description")
    return str(name or "")


def fmt_value(v: Any) -> str:
    if v is None:
        return T("value.unknown")
    if isinstance(v, bool):
        return T("value.yes") if v else T("value.no")
    if isinstance(v, list):
        return ", ".join(map(str, v)) if v else T("value.none")
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
    out = [f"| | {T('ui.render.col_check')} | {T('ui.render.col_result')} | {T('ui.render.col_details')} | "
           f"{T('ui.render.col_time')} |", "|---|---|---|---|---:|"]
    for status, title, details, dur in rows:
        t = T("ui.render.seconds", seconds=float(dur)) if isinstance(dur, (int, float)) else ""
        out.append(f"| {STATUS_GLYPH.get(status or '', ':gray[:material/help:]')} | {safe.md_inline(title, 80)} | "
                   f"{status_word(status, safe.md_inline(status))} | {safe.md_inline(details, 160)} | {t} |")
    st.markdown("\n".join(out))


def legend() -> None:
    st.caption("  ".join(f"{STATUS_GLYPH[k]} {status_word(k)}" for k in ("ok", "warn", "fail", "timeout", "crashed",
                                                                          "skipped")))


def probe_board(probes: list[dict[str, Any]]) -> None:
    st.subheader(T("ui.render.checks"))
    counts: dict[str, int] = {}
    for p in probes:
        counts[p.get("status")] = counts.get(p.get("status"), 0) + 1
    st.markdown(" · ".join(f"{STATUS_GLYPH.get(k, '?')} {n} {status_word(k, safe.md_inline(k))}"
                          for k, n in counts.items()))
    status_table([(p.get("status"), probe_title(p.get("id"), p.get("title")), p.get("summary") or p.get("error") or "",
                   p.get("duration_s")) for p in probes])
    troubled = [p for p in probes if p.get("status") in ("fail", "warn", "timeout", "crashed") and
                (p.get("error") or p.get("evidence") or p.get("output_tail"))]
    if troubled:
        with st.expander(T("ui.render.troubled_checks", count=len(troubled))):
            for p in troubled:
                st.markdown(f"**{STATUS_GLYPH.get(p.get('status'), '?')} {safe.md_inline(p.get('title') or p.get('id'))}**"
                            f" — {status_word(p.get('status'), '')}")
                lines = []
                if p.get("error"):
                    lines.append(str(p["error"]))
                for e in (p.get("evidence") or [])[:8]:
                    lines.append(f"{e.get('source', '')}: {e.get('excerpt', '')}")
                if p.get("status") in ("crashed", "timeout") and p.get("output_tail"):
                    lines.append(T("ui.render.last_output") + "\n" + str(p["output_tail"])[-2000:])
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
    where = source_name(e.get("source", ""))
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
    kind = T("ui.render.kind_fact") if e.get("kind") == "fact" else T("ui.render.kind_log")
    return (f'<div class="gd-ev"><span class="gd-src">{safe.esc(where)} ({safe.esc(kind)})</span>\n'
            f"{safe.highlight(text, spans)}</div>")


def diagnosis_card(d: dict[str, Any], patterns: dict[str, list[Any]], expanded: bool = False) -> None:
    glyph = SEV_GLYPH.get(d.get("severity"), "")
    label = (f"{glyph} {safe.md_inline(d.get('title'))}  ·  {sev_word(d.get('severity'))}  ·  "
             + T("ui.render.confidence", confidence=float(d.get("confidence") or 0)))
    with st.expander(label, expanded=expanded):
        translation_note(d)
        if d.get("consequence_of"):
            st.caption(T("ui.render.consequence_of",
                         causes=", ".join(safe.md_inline(x) for x in d["consequence_of"])))
        ev = d.get("evidence") or []
        if ev:
            st.markdown(T("ui.render.evidence"))
            st.markdown("".join(evidence_html(e, patterns.get(str(d.get("id")), [])) for e in ev[:12]),
                        unsafe_allow_html=True)
        if d.get("consequence_of"):  # the cause's fix comes first; this one's would repeat or contradict it
            st.caption(T("ui.render.consequence_fix_first"))
        else:
            st.markdown(T("ui.render.how_to_fix"))
            st.markdown(safe.md_html(d.get("fix") or T("ui.render.no_fix")), unsafe_allow_html=True)
        if d.get("cause"):
            st.markdown(T("ui.render.why"))
            st.markdown(safe.md_html(d["cause"]), unsafe_allow_html=True)
        links = [u for u in (d.get("links") or []) if isinstance(u, str) and u.startswith(("http://", "https://"))]
        if links:
            st.markdown(T("ui.render.sources"))
            st.markdown(safe.md_html("\n".join(f"- <{u}>" for u in links)), unsafe_allow_html=True)
        st.caption(T("ui.render.kb_entry", id=safe.md_inline(d.get("id"))))


def translation_note(d: dict[str, Any]) -> None:
    """A line under KB prose that is not in the visitor's language, or whose translation is older than the English."""
    if lang() == "en" or not d.get("lang"):
        return
    if d.get("lang") == "en":
        st.caption(T("ui.kb.translation_missing"))
    elif d.get("translation_stale"):
        st.caption(T("ui.kb.translation_stale"))


def localized(rep: dict[str, Any]) -> dict[str, Any]:
    """A copy of *rep* whose diagnoses carry the KB prose (title, symptoms, cause, fix) in the visitor's language;
    what the matcher found (ids, evidence, confidence) is unchanged."""
    code = lang()
    if code == "en" or rep.get("_lang") == code:
        return rep
    try:
        from diagnostics.i18n import localize_diagnoses
        from diagnostics.service import get_kb

        kb, _ = get_kb()
    except Exception:
        return rep
    out = dict(rep)
    for key in ("diagnoses", "not_ruled_out", "possible"):
        if rep.get(key):
            out[key] = localize_diagnoses(list(rep[key]), kb, code)
    from diagnostics.i18n.probe_text import localize_report

    out = localize_report(out, code)  # the checks' own sentences (summaries, evidence, GPU watch) as well
    out["_lang"] = code
    return out


def diagnoses(report: dict[str, Any]) -> None:
    report = localized(report)
    ds = report.get("diagnoses") or []
    real = [d for d in ds if not d.get("benign")]
    benign = [d for d in ds if d.get("benign")]
    st.subheader(T("ui.render.causes"))
    patterns = _kb_patterns() if ds else {}
    if not real and report.get("possible"):
        # guesses only: say so, in a neutral colour (never the green all-clear, never red)
        st.info(T("ui.render.no_confirmed_possible"), icon=":material/help:")
    elif not real:
        st.success(T("ui.render.no_match"))
    for i, d in enumerate(real):
        diagnosis_card(d, patterns, expanded=(i == 0))
    if benign:
        with st.expander(T("ui.render.benign_count", count=len(benign)), icon=":material/info:"):
            for d in benign:
                st.markdown(f"- **{safe.md_inline(d.get('title'))}** ({safe.md_inline(d.get('id'))})")
                ev = d.get("evidence") or []
                if ev:
                    st.markdown("".join(evidence_html(e, patterns.get(str(d.get("id")), [])) for e in ev[:3]),
                                unsafe_allow_html=True)
    nro = report.get("not_ruled_out") or []
    if nro:
        with st.expander(T("ui.render.not_ruled_out_count", count=len(nro)), icon=":material/help:"):
            for d in nro:
                st.markdown(f"- **{safe.md_inline(d.get('title'))}**: {safe.md_inline(d.get('reason'))}")
    possible(report.get("possible") or [])


def possible(guesses: list[dict[str, Any]]) -> None:
    """Ranked guesses ("basis": "possible") in their own grey section: never a severity colour, never a verdict."""
    if not guesses:
        return
    st.subheader(T("ui.render.possible_header"))
    st.caption(T("ui.render.possible_caption"))
    for d in guesses:
        words = "; ".join(str(e.get("excerpt", "")) for e in d.get("evidence") or [] if e.get("kind") == "symptom")
        with st.expander(f":gray[:material/help:] {safe.md_inline(d.get('title'))}  ·  {safe.md_inline(words, 80)}"):
            if d.get("root_of"):
                st.caption(T("ui.render.possible_root_of", id=safe.md_inline(d.get("root_of"))))
            st.markdown(T("ui.render.how_to_fix"))
            st.markdown(safe.md_html(d.get("fix") or T("ui.render.no_fix")), unsafe_allow_html=True)
            st.caption(T("ui.render.kb_entry", id=safe.md_inline(d.get("id"))))


def unexplained(rep: dict[str, Any]) -> None:
    """Failed checks no known cause explains: the check, its output, the nearest KB entries, how to teach it."""
    items = rep.get("unexplained") or []
    if not items:
        return
    st.subheader(T("ui.render.unexplained_title"))
    for c in items:
        st.markdown(f"**{STATUS_GLYPH.get(c.get('status'), '?')} {safe.md_inline(c.get('title') or c.get('id'))}** — "
                    f"{safe.md_inline(c.get('summary') or c.get('error') or '')}")
        body = []
        if c.get("signal"):
            body.append(str(c["signal"]))
        if c.get("output"):
            body.append(str(c["output"])[-3000:])
        if body:
            st.code("\n".join(body), language=None, wrap_lines=True)
        near = c.get("nearest") or []
        if near:
            st.caption(T("ui.render.unexplained_nearest", entries="; ".join(
                f"{safe.md_inline(n.get('title'))} ({safe.md_inline(n.get('id'))})" for n in near)))
        st.caption(T("ui.render.unexplained_new_entry"))


def facts_table(facts: dict[str, Any]) -> None:
    from diagnostics.service import factcat

    CATALOGUE = factcat.CATALOGUE
    rows = [{T("ui.render.col_fact"): k, T("ui.render.col_value"): safe.short(fmt_value(v), 300),
             T("ui.render.col_meaning"): (CATALOGUE.get(k) or ("", ""))[1]} for k, v in sorted(facts.items())]
    st.dataframe(rows, hide_index=True, width="stretch")


def token_curve(gen: dict[str, Any], prefix: str = "") -> list[tuple[float, int]]:
    """(seconds since generate() started, tokens so far) from the per-token arrival times the generation child
    measured (``token_times``); ``[]`` when the report has none: no curve is made up from two figures."""
    times = gen.get(prefix + "token_times")
    if isinstance(times, list) and times and all(isinstance(t, (int, float)) for t in times):
        return [(0.0, 0)] + [(float(t), i + 1) for i, t in enumerate(times)]
    return []


# What the built-in models reach on a working device, to read a tokens/s figure against (measured, see
# docs/GENERATION.md "The cold GPU": H200 host, 16 CPU threads, and the doctor's own test run).  Random weights,
# a few tokens: the point is "does the device work", not a benchmark; launch-bound on a GPU.
SPEED_REFERENCE = {("builtin:tiny", "cpu"): (400, 1000), ("builtin:tiny", "gpu"): (15, 260),
                   ("builtin:1b", "cpu"): (15, 25), ("builtin:1b", "gpu"): (15, 71)}


def speed_reference(gen: dict[str, Any]) -> tuple[int, int] | None:
    dev = str(gen.get("device") or "")
    cls = "cpu" if dev == "cpu" else ("gpu" if dev.startswith(("cuda", "mixed")) else "")
    return SPEED_REFERENCE.get((str(gen.get("model") or ""), cls))


def _random_weights(gen: dict[str, Any]) -> bool:
    return str(gen.get("model") or "").startswith("builtin:")


def probe_title(pid: str | None, title: str | None) -> str:
    """A check's name in the visitor's language (the registry's English title when the catalogue has none)."""
    key = f"probe.{pid}"
    msg = T(key) if pid else key
    return (title or pid or "?") if msg == key else msg


def generation(gen: dict[str, Any]) -> None:
    st.subheader(T("ui.render.test_generation"))
    status = gen.get("status")
    if not gen.get("tokens_per_s"):
        word = T(f"generation_word.{status}") if status in ("skipped", "timeout", "crashed", "fail") else \
            T("ui.render.no_figures")
        st.warning(T("ui.render.generation_word", word=word))
        if gen.get("error"):
            st.code(str(gen["error"]), language=None, wrap_lines=True)
        return
    dev = str(gen.get("device") or "?")
    st.caption(T("ui.render.model_ran_on", model=safe.md_inline(gen.get("model")), device=safe.md_inline(dev),
                 dtype=", " + safe.md_inline(gen.get("dtype")) if gen.get("dtype") else ""))
    c = st.columns(5)
    c[0].metric(T("ui.render.device"), dev.upper() if dev in ("cpu", "cuda") else dev, help=T("ui.render.device_help"))
    c[1].metric(T("ui.render.tokens_per_s"), f"{gen.get('tokens_per_s', 0):.1f}")
    c[2].metric(T("ui.render.ttft"), T("ui.render.seconds_value", value=f"{gen.get('ttft_s') or 0:.3f}"))
    c[3].metric(T("ui.render.model_load"), T("ui.render.seconds_value", value=f"{gen.get('load_s') or 0:.2f}"))
    rss = gen.get("peak_rss_bytes")
    c[4].metric(T("ui.render.peak_host_memory"),
                f"{rss / (1 << 20):.0f} MiB" if isinstance(rss, (int, float)) else T("ui.render.na"))
    for w in gen.get("warnings") or []:
        st.warning(str(w))
    ref = speed_reference(gen)
    rate = gen.get("tokens_per_s")
    if ref and isinstance(rate, (int, float)):
        where = T("ui.render.speed_in_range") if ref[0] <= rate <= ref[1] else (
            T("ui.render.speed_below") if rate < ref[0] else T("ui.render.speed_above"))
        st.caption(T("ui.render.speed_reference", rate=f"{rate:.1f}", low=ref[0], high=ref[1],
                     device=T("ui.render.on_cpu") if dev == "cpu" else T("ui.render.on_gpu"), where=where))
    else:
        st.caption(T("ui.render.speed_no_reference"))
    curves = {T("ui.render.on_cpu") if dev == "cpu" else T("ui.render.on_gpu"): token_curve(gen)}
    if gen.get("cpu_tokens_per_s"):
        curves[T("ui.render.on_cpu")] = token_curve(gen, "cpu_")
    curves = {k: v for k, v in curves.items() if v}
    if curves:  # measured arrival times only; each point is one token
        xs, ys, run = T("ui.render.axis_seconds"), T("ui.render.axis_tokens"), T("ui.render.axis_run")
        rows = [{xs: t, ys: n, run: name} for name, pts in curves.items() for t, n in pts]
        st.markdown(T("ui.render.token_curve"))
        st.line_chart(rows, x=xs, y=ys, color=run, height=240)
        st.caption(T("ui.render.curve_measured"))
    else:
        st.caption(T("ui.render.no_token_times"))
    if gen.get("cpu_tokens_per_s"):  # two numbers: said in words, not drawn
        st.markdown(T("ui.render.gpu_cpu_words", gpu=f"{float(gen['tokens_per_s']):.1f}",
                      cpu=f"{float(gen['cpu_tokens_per_s']):.1f}"))
        if gen.get("gpu_vs_cpu_ratio"):
            st.caption(T("ui.render.gpu_ratio", ratio=float(gen["gpu_vs_cpu_ratio"])))
    elif dev == "cpu":
        st.info(T("ui.render.ran_on_cpu"), icon=":material/info:")
    elif gen.get("cpu_compare_skipped"):
        st.caption(T("ui.render.cpu_compare_skipped", reason=safe.md_inline(gen["cpu_compare_skipped"])))
    if gen.get("monitor"):
        from ui import gpu_watch

        gpu_watch.show(gen)
    if gen.get("text"):
        random = _random_weights(gen)
        with st.expander(T("ui.render.generated_text_random" if random else "ui.render.generated_text")):
            if random:
                st.caption(T("ui.render.random_text_note"))
            st.text(str(gen["text"])[:4000])


def headline(rep: dict[str, Any]) -> None:
    from diagnostics.service import verdict as _v

    verdict = _v(rep)  # recomputed by the one rule, never read from the stored report
    if verdict == "problems":
        diags = localized(rep).get("diagnoses") or []
        titles = {d.get("id"): d.get("title") for d in diags}
        roots = [titles.get(r) or r for r in rep.get("root_causes") or []]
        if not roots:
            roots = [d.get("title") for d in diags if not d.get("benign")][:1]
        st.error(T("ui.render.problem_found", title="; ".join(safe.md_inline(r) for r in roots) if roots else
                   T("ui.render.see_below")), icon=":material/report:")
    elif verdict == "unexplained":
        st.error(T("ui.render.unexplained"), icon=":material/report:")
    elif rep.get("possible"):
        # guesses from words only (basis "possible"): never the red "Problem found", nor a green all-clear
        guesses = localized(rep).get("possible") or []
        titles = "; ".join(safe.md_inline(d.get("title")) for d in guesses[:3])
        st.info(T("ui.render.possible_only", count=len(guesses), titles=titles), icon=":material/help:")
        if verdict == "incomplete":
            st.warning(T("ui.render.incomplete"), icon=":material/warning:")
    elif verdict == "incomplete":
        st.warning(T("ui.render.incomplete"), icon=":material/warning:")
    else:
        st.success(T("ui.render.no_problem"), icon=":material/check_circle:")


def logs(rep: dict[str, Any]) -> None:
    lg = rep.get("logs") or []
    if lg:
        with st.expander(T("ui.sessions.pasted_logs", count=len(lg))):
            for item in lg:
                st.caption(safe.md_inline(source_name(item.get("name")) or T("ui.render.kind_log")))
                st.code(str(item.get("text") or "")[:20000], language=None, wrap_lines=True)


def removed_table(replacements: list[dict[str, Any]], identity: dict[str, int] | None = None) -> None:
    """What redaction takes out of a shared report: the kind and the place of each secret, never its value."""
    rows = [{T("ui.render.col_replaced_by"): str(r.get("placeholder", "")), T("ui.render.col_what"): str(r.get("kind", "")),
             T("ui.render.col_where"): ", ".join(map(str, r.get("where") or []))[:300]} for r in replacements or []]
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    else:
        st.caption(T("ui.render.no_secret"))
    hits = {k: v for k, v in (identity or {}).items() if v}
    if hits:
        st.caption(T("ui.render.identity_masked", items=", ".join(f"{safe.md_inline(k)} × {v}" for k, v in hits.items())))


def report(rep: dict[str, Any], show_headline: bool = True) -> None:
    rep = localized(rep)
    if show_headline:
        headline(rep)
    diagnoses(rep)
    unexplained(rep)
    if rep.get("probes"):
        probe_board(rep["probes"])
        legend()
    gen = rep.get("generation")
    if gen:
        generation(gen)
    parsed = rep.get("parsed") or []
    if parsed:
        st.caption(T("ui.render.read", items="; ".join(
            T("ui.render.read_item", name=safe.md_inline(p.get("name")), kind=safe.md_inline(p.get("kind")),
              count=len(p.get("facts") or {})) for p in parsed)))
    notes = [str(n) for n in (rep.get("notes") or []) if n]
    if notes:
        with st.expander(T("ui.render.notes_count", count=len(notes)), icon=":material/sticky_note_2:"):
            st.code("\n".join(notes), language=None, wrap_lines=True)
    logs(rep)
    with st.expander(T("ui.render.all_facts", count=len(rep.get("facts") or {}))):
        facts_table(rep.get("facts") or {})
