"""Shared rendering of reports (used by the Diagnose and Sessions pages).  No logic beyond layout."""
from __future__ import annotations

from typing import Any

import streamlit as st

STATUS_GLYPH = {"ok": "✅", "warn": "⚠️", "fail": "❌", "timeout": "⏱️", "crashed": "💥", "skipped": "➖",
                "running": "⏳"}
STATUS_WORD = {"ok": "passed", "warn": "warning", "fail": "failed", "timeout": "timed out", "crashed": "crashed",
               "skipped": "skipped", "running": "running"}
SEV_GLYPH = {"critical": "🛑", "error": "❌", "warning": "⚠️", "info": "ℹ️"}


def fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(map(str, v)) if v else "(none)"
    if isinstance(v, int) and v >= 1 << 24:
        return f"{v / (1 << 30):.2f} GiB"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def probe_board(probes: list[dict[str, Any]]) -> None:
    st.subheader("Checks")
    rows = [{"": STATUS_GLYPH.get(p.get("status"), "?"), "check": p.get("title") or p.get("id"),
             "result": STATUS_WORD.get(p.get("status"), p.get("status")),
             "details": p.get("summary") or p.get("error") or "",
             "time (s)": round(float(p.get("duration_s") or 0), 2)} for p in probes]
    st.dataframe(rows, hide_index=True, width="stretch")


def diagnoses(report: dict[str, Any]) -> None:
    ds = report.get("diagnoses") or []
    real = [d for d in ds if not d.get("benign")]
    benign = [d for d in ds if d.get("benign")]
    st.subheader("Diagnosis")
    if not real:
        st.success("No known problem matched.")
    for d in real:
        glyph = SEV_GLYPH.get(d.get("severity"), "")
        label = f"{glyph} {d['title']}  ·  {d['severity']}  ·  confidence {d.get('confidence', 0):.0%}"
        with st.expander(label, expanded=d.get("rank") == 1):
            if d.get("consequence_of"):
                st.caption("Probably a consequence of: " + ", ".join(d["consequence_of"]))
            st.markdown("**Evidence**")
            ev = d.get("evidence") or []
            if ev:
                st.code("\n".join(_ev_line(e) for e in ev[:12]), language=None, wrap_lines=True)
            st.markdown("**How to fix it**")
            st.markdown(d.get("fix") or "")
            if d.get("cause"):
                st.markdown("**Why this happens**")
                st.markdown(d["cause"])
            links = d.get("links") or []
            if links:
                st.caption("Sources: " + " · ".join(f"<{u}>" for u in links if u.startswith(("http://", "https://"))))
            st.caption(f"Knowledge-base entry: `{d['id']}`")
    if benign:
        with st.expander(f"ℹ️ {len(benign)} harmless message(s) seen"):
            for d in benign:
                st.markdown(f"- **{d['title']}** (`{d['id']}`)")
    nro = report.get("not_ruled_out") or []
    if nro:
        with st.expander(f"❔ {len(nro)} cause(s) not ruled out (a check could not run)"):
            for d in nro:
                st.markdown(f"- **{d['title']}**: {d['reason']}")


def _ev_line(e: dict[str, Any]) -> str:
    where = str(e.get("source", ""))
    if e.get("line"):
        where += f":{e['line']}"
    return f"{where}: {e.get('excerpt', '')}"


def facts_table(facts: dict[str, Any]) -> None:
    rows = [{"fact": k, "value": fmt_value(v)} for k, v in sorted(facts.items())]
    st.dataframe(rows, hide_index=True, width="stretch")


def report(rep: dict[str, Any]) -> None:
    verdict = rep.get("verdict")
    if verdict == "problems":
        top = next((d for d in rep.get("diagnoses", []) if not d.get("benign")), None)
        st.error(f"Problem found: {top['title']}" if top else "Problems found")
    elif verdict == "incomplete":
        st.warning("Some checks crashed or timed out; the diagnosis may be incomplete.")
    else:
        st.success("No known problem found.")
    diagnoses(rep)
    if rep.get("probes"):
        probe_board(rep["probes"])
    gen = rep.get("generation")
    if gen:
        st.subheader("Test generation")
        if gen.get("tokens_per_s"):
            c = st.columns(4)
            c[0].metric("device", str(gen.get("device")))
            c[1].metric("tokens/s", f"{gen.get('tokens_per_s', 0):.1f}")
            c[2].metric("load time", f"{gen.get('load_s') or 0:.1f} s")
            c[3].metric("first token", f"{gen.get('ttft_s') or 0:.2f} s")
        else:
            st.info(f"Test generation {gen.get('status', 'did not run')}: {gen.get('error') or ''}")
    with st.expander("All facts"):
        facts_table(rep.get("facts") or {})
