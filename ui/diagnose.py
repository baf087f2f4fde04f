"""Diagnose: run every probe with live progress, show the checks and the ranked causes."""
from __future__ import annotations

import sys

import streamlit as st

from diagnostics import service
from diagnostics.jobs import Job
from ui import render

st.title("🩺 Diagnose this machine")
st.caption("Runs every check in its own process with a time limit: a crashing or hanging GPU stack cannot take this page down.")

with st.form("run"):
    python = st.text_input("Python interpreter to diagnose", value=sys.executable,
                           help="The interpreter whose torch is checked (for example your project's virtual environment).")
    generate = st.checkbox("Also run the test generation (loads a tiny built-in model)", value=False)
    started = st.form_submit_button("Run diagnosis", type="primary")

if started:
    st.session_state["job"] = Job(service.run_local, python=python.strip() or None, generate=generate)
    st.session_state.pop("report", None)


@st.fragment(run_every=0.5)
def _progress() -> None:
    job = st.session_state.get("job")
    if job is None:
        return
    state = job.progress()
    rows = [{"": render.STATUS_GLYPH.get(p["status"], "⏳"), "check": p["title"],
             "state": render.STATUS_WORD.get(p["status"], p["status"]) + (f" — {p['stage']}" if p["stage"] and p["status"] == "running" else ""),
             "time (s)": round(p["duration_s"] if p["duration_s"] is not None else p.get("elapsed", 0), 1)}
            for p in state.values()]
    if not job.done:
        st.info("Diagnosis running…")
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch")
        return
    st.session_state.pop("job", None)
    if job.error:
        st.session_state["run_error"] = job.error
    else:
        st.session_state["report"] = job.result
    st.rerun()


if st.session_state.get("job") is not None:
    _progress()

if st.session_state.get("run_error"):
    st.error("The diagnosis could not finish: " + st.session_state.pop("run_error"))

rep = st.session_state.get("report")
if rep:
    render.report(rep)
