"""Diagnose: run every probe with live progress, or diagnose pasted logs and dumps; show, save and share."""
from __future__ import annotations

import json
import sys
import time

import streamlit as st

from diagnostics import service
from diagnostics.jobs import Job
from ui import common, render, safe

MAX_UPLOAD_BYTES = service.MAX_TEXT_BYTES

common.style()
st.title("Diagnose a GPU machine-learning setup")
st.caption("Every check runs in its own process with a time limit: a crashing or hanging GPU stack cannot take "
           "this page down. Nothing is stored unless you press *Save*.")

tab_live, tab_text = st.tabs([":material/computer: Check this machine", ":material/content_paste: Paste logs or dumps"])

with tab_live:
    with st.form("run"):
        python = st.text_input(
            "Python interpreter to diagnose", value=sys.executable, key="python",
            help="The interpreter whose torch is checked, for example your project's virtual environment "
                 "(…/venv/bin/python). The doctor never imports torch itself.")
        generate = st.checkbox("Also run a test generation with a small model", value=False, key="generate",
                               help="Loads a model with transformers in the interpreter above, generates a few "
                                    "tokens on the GPU (and on the CPU to compare) and measures the speed.")
        model = st.text_input("Model for the test generation", value="", key="model",
                              placeholder="built-in tiny model (no download)",
                              help="A local model folder or a Hugging Face model id that is already in the "
                                   "local cache; nothing is downloaded.")
        with_logs = st.checkbox("Match the text in the *Paste logs or dumps* tab too", value=True, key="with_logs")
        started = st.form_submit_button("Run diagnosis", type="primary")


def _pasted() -> list[tuple[str, str]]:
    """The text pasted in the box and the uploaded files, as (name, text)."""
    items: list[tuple[str, str]] = []
    text = st.session_state.get("paste") or ""
    if text.strip():
        items.append(("pasted text", text))
    for f in st.session_state.get("uploads") or []:
        data = f.getvalue()[:MAX_UPLOAD_BYTES]
        items.append((f.name, service.decode_text(data, f.name)))
    return items


with tab_text:
    st.markdown("Paste an error log, a traceback, or the output of `rocminfo`, `rocm-smi`, `amd-smi`, "
                "`nvidia-smi`, `python -m torch.utils.collect_env`, `hipconfig` or `dmesg`. Tool outputs are "
                "recognised and read for facts; everything is matched against the knowledge base.")
    st.text_area("Logs or dumps", key="paste", height=220, placeholder="Paste text here…")
    st.file_uploader("…or upload files", key="uploads", accept_multiple_files=True,
                     help="Any text file: logs, dumps. Nothing leaves this server.")
    text_clicked = st.button("Diagnose the pasted text", type="primary", key="diagnose_text")

if started:
    logs = _pasted() if with_logs else []
    st.session_state["job"] = Job(service.run_local, python=python.strip() or None, generate=generate,
                                  model=model.strip() or None, logs=logs)
    for k in ("report", "saved_id"):
        st.session_state.pop(k, None)

if text_clicked:
    items = _pasted()
    if not items:
        st.warning("Paste some text or upload a file first.")
    else:
        try:
            res = service.diagnose_text(logs=items)
            rep = service.new_report("pasted")
            rep.update({k: res.get(k) for k in ("facts", "diagnoses", "not_ruled_out", "parsed", "notes",
                                                 "kb_version")})
            rep["logs"] = [{"name": n, "text": t} for n, t in items]
            rep["verdict"] = service.verdict(rep)
            st.session_state["report"] = rep
            st.session_state.pop("saved_id", None)
        except Exception as exc:
            st.error(f"The text could not be diagnosed: {type(exc).__name__}: {exc}")


@st.fragment(run_every=0.5)
def _progress() -> None:
    job = st.session_state.get("job")
    if job is None:
        return
    state = job.progress()
    if not job.done:
        finished = sum(1 for p in state.values() if p["status"] != "running")
        st.info(f"Diagnosis running for {time.time() - job.started:.0f} s — {finished} of {len(state) or '…'} "
                "checks finished.", icon=":material/hourglass_top:")
        if state:
            st.progress(finished / max(1, len(state)))
        if state:
            render.status_table([(p["status"], p["title"], p["stage"] if p["status"] == "running" else "",
                                  p["duration_s"] if p["duration_s"] is not None else p.get("elapsed", 0))
                                 for p in state.values()])
        else:
            st.caption("Starting the checks…")
        if st.button("Stop", icon=":material/stop_circle:", key="stop"):
            job.cancel.set()
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
    st.error("The diagnosis could not finish: " + safe.md_inline(st.session_state.pop("run_error")))


def _share(rep: dict) -> None:
    """Save (for a link and a support bundle) and download the report; secrets are removed in both."""
    from diagnostics.redact import redact_report
    from diagnostics.store import render_markdown

    stamp = str(rep.get("session_id") or "report")[:8]
    saved = st.session_state.get("saved_id")
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns(4, vertical_alignment="center")
        with c1:
            if saved is None and st.button("Save this session", icon=":material/save:", type="primary", key="save",
                                           help="Stores the report (secrets removed) so others can open it by link."):
                store = common.store()
                if store is not None:
                    try:
                        st.session_state["saved_id"] = saved = store.save(rep)
                    except Exception as exc:
                        st.error(f"The session could not be saved: {type(exc).__name__}: {exc}")
            if saved:
                st.markdown(":green[:material/check_circle:] Saved")
        mask = st.session_state.get("mask_identity", False)
        clean = redact_report(rep, mask_identity=mask)
        c2.download_button("Report (Markdown)", icon=":material/download:", data=render_markdown(clean),
                           file_name=f"gpu-doctor-{stamp}.md", mime="text/markdown", key="dl_md")
        c3.download_button("Report (JSON)", icon=":material/download:",
                           data=json.dumps(clean, indent=2, ensure_ascii=False),
                           file_name=f"gpu-doctor-{stamp}.json", mime="application/json", key="dl_json")
        with c4:
            store = common.store() if saved else None
            if saved and store is not None:
                st.download_button("Bundle for support", icon=":material/package_2:",
                                   data=store.export_bundle(saved, mask_identity=mask),
                                   file_name=f"gpu-doctor-session-{saved[:8]}.json", mime="application/json",
                                   key="dl_bundle",
                                   help="A checksummed file that another GPU doctor imports on its Sessions page.")
            else:
                st.caption("Save to get a link and a bundle for support.")
        st.checkbox("Hide the host and user names in downloads", key="mask_identity",
                    help="Secrets such as tokens and passwords are always removed.")
        try:
            from diagnostics.redact import preview_report

            prev = preview_report(rep, mask_identity=mask)
            n = len(prev.get("replacements") or [])
            with st.expander(f"What is removed before saving or sharing ({n} secret{'s' if n != 1 else ''})",
                             icon=":material/shield:"):
                render.removed_table(prev.get("replacements") or [], prev.get("identity"))
        except Exception:  # an older redact module without previews: the downloads are redacted all the same
            pass
        if saved:
            st.caption("Link to this session (anyone who can reach this server can open it):")
            st.code(common.session_link(saved), language=None)
            st.markdown(f":material/folder_open: [Open the saved session]({common.PATH_SESSIONS}?session={saved})")


rep = st.session_state.get("report")
if rep and st.session_state.get("job") is None:
    st.divider()
    if rep.get("source") == "pasted":
        st.caption("Diagnosis of the pasted text (no checks were run on this machine).")
    render.headline(rep)
    _share(rep)
    render.report(rep, show_headline=False)
