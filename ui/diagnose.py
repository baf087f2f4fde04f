"""Diagnose: run every probe with live progress, or diagnose pasted logs and dumps; show, save and share."""
from __future__ import annotations

import json
import sys
import time

import streamlit as st

from diagnostics import service
from diagnostics import jobs
from diagnostics.jobs import Job
from ui import common, render, safe
from ui.common import T

MAX_UPLOAD_BYTES = service.MAX_TEXT_BYTES

common.style()
st.title(T("ui.diagnose.title"))
st.caption(T("ui.diagnose.intro"))

tab_live, tab_text = st.tabs([T("ui.diagnose.tab_machine"), T("ui.diagnose.tab_paste")])

with tab_live:
    with st.form("run"):
        python = st.text_input(T("ui.diagnose.python_label"), value=sys.executable, key="python",
                               help=T("ui.diagnose.python_help"))
        generate = st.checkbox(T("ui.diagnose.generate_label"), value=False, key="generate",
                               help=T("ui.diagnose.generate_help"))
        model = st.text_input(T("ui.diagnose.model_label"), value="", key="model",
                              placeholder=T("ui.diagnose.model_placeholder"), help=T("ui.diagnose.model_help"))
        with_logs = st.checkbox(T("ui.diagnose.match_paste_too"), value=True, key="with_logs")
        started = st.form_submit_button(T("ui.diagnose.run"), type="primary")


def _pasted() -> list[tuple[str, str]]:
    """The text pasted in the box and the uploaded files, as (name, text)."""
    items: list[tuple[str, str]] = []
    text = st.session_state.get("paste") or ""
    if text.strip():
        items.append((render.PASTED, text))  # stored under the English name; shown in the visitor's language
    for f in st.session_state.get("uploads") or []:
        data = f.getvalue()[:MAX_UPLOAD_BYTES]
        items.append((f.name, service.decode_text(data, f.name)))
    return items


with tab_text:
    st.markdown(T("ui.diagnose.paste_help"))
    st.text_area(T("ui.diagnose.paste_label"), key="paste", height=220, placeholder=T("ui.diagnose.paste_placeholder"))
    st.file_uploader(T("ui.diagnose.upload_label"), key="uploads", accept_multiple_files=True,
                     help=T("ui.diagnose.upload_help"))
    text_clicked = st.button(T("ui.diagnose.diagnose_pasted"), type="primary", key="diagnose_text")

if started:
    logs = _pasted() if with_logs else []
    # early_verdict: the checks' own diagnosis comes as soon as they end, while the test generation still runs
    st.session_state["job"] = Job(service.run_local, python=python.strip() or None, generate=generate,
                                  model=model.strip() or None, logs=logs, early_verdict=True)
    # every step is counted from the start, weighted by its expected time; the fraction never goes back
    st.session_state["job_progress"] = jobs.Progress(jobs.plan(generate))
    st.session_state.pop("job_stopping", None)
    for k in ("report", "saved_id"):
        st.session_state.pop(k, None)

if text_clicked:
    items = _pasted()
    if not items:
        st.warning(T("ui.diagnose.nothing_pasted"))
    else:
        try:
            res = service.diagnose_text(logs=items)
            rep = service.new_report("pasted")
            rep.update({k: res.get(k) for k in ("facts", "diagnoses", "not_ruled_out", "possible", "parsed", "notes",
                                                 "kb_version", "root_causes", "unexplained")})
            rep["logs"] = [{"name": n, "text": t} for n, t in items]
            rep["verdict"] = service.verdict(rep)
            st.session_state["report"] = rep
            st.session_state["_scroll_results"] = True
            st.session_state.pop("saved_id", None)
        except Exception as exc:
            st.error(T("ui.diagnose.diagnose_failed", error=f"{type(exc).__name__}: {exc}"))


@st.fragment(run_every=0.5)
def _progress() -> None:
    job = st.session_state.get("job")
    if job is None:
        return
    state = job.progress()
    if not job.done:
        from diagnostics.i18n.probe_text import localize_text

        early = job.early_report
        if early:  # the checks are done and judged; only the test generation is still running
            with st.container(key="gd_verdict_early"):
                render.headline(early)
                st.caption(T("ui.diagnose.early_verdict"))

        prog = st.session_state.get("job_progress") or jobs.Progress(jobs.plan(True))
        steps = prog.steps
        frac = prog.update(state)
        finished = sum(1 for sid, _, _ in steps if sid in state and state[sid]["status"] != "running")
        msg = T("ui.diagnose.running", seconds=time.time() - job.started, finished=finished, total=len(steps))
        if st.session_state.get("job_stopping"):
            msg = T("ui.diagnose.stopping")
        st.info(msg, icon=":material/hourglass_top:")
        st.progress(frac, text=f"{frac * 100:.0f}%")
        rows = []
        for sid, title, _ in steps:
            p = state.get(sid)
            if p is None:
                rows.append((None, render.probe_title(sid, title), T("ui.diagnose.waiting"), None))
            else:
                stage = localize_text(p["stage"], common.lang()) if p["status"] == "running" else ""
                rows.append((p["status"], render.probe_title(sid, p["title"]), stage,
                             p["duration_s"] if p["duration_s"] is not None else p.get("elapsed", 0)))
        render.status_table(rows)
        if st.button(T("ui.diagnose.stop"), icon=":material/stop_circle:", key="stop",
                     disabled=bool(st.session_state.get("job_stopping"))):
            job.cancel.set()  # reaches every running child: the probes and the test generation
            st.session_state["job_stopping"] = True
        return
    st.session_state.pop("job", None)
    if job.error:
        st.session_state["run_error"] = job.error
    else:
        st.session_state["report"] = job.result
        st.session_state["_scroll_results"] = True
    st.rerun()


if st.session_state.get("job") is not None:
    _progress()

if st.session_state.get("run_error"):
    st.error(T("ui.diagnose.run_failed", error=safe.md_inline(st.session_state.pop("run_error"))))


SCROLL_JS = ('<script>const r = window.parent.document.getElementById("gd-results");'
             'if (r) r.scrollIntoView({behavior: "smooth", block: "start"});</script>')


def _scroll_script() -> None:
    """Bring new results into view (a static script in a same-origin iframe; no user text in it)."""
    if hasattr(st, "iframe"):
        st.iframe(SCROLL_JS, height=1)
    else:
        import streamlit.components.v1 as components

        components.html(SCROLL_JS, height=0)


def _share(rep: dict) -> None:
    """Save (for a link and a support bundle) and download the report; secrets are removed in both."""
    from diagnostics.sessions import redact_report, render_markdown

    stamp = str(rep.get("session_id") or "report")[:8]
    saved = st.session_state.get("saved_id")
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns(4, vertical_alignment="center")
        with c1:
            if saved is None and st.button(T("ui.diagnose.save"), icon=":material/save:", type="primary", key="save",
                                           help=T("ui.diagnose.save_help")):
                store = common.store()
                if store is not None:
                    try:
                        st.session_state["saved_id"] = saved = store.save(rep)
                        st.rerun()  # redraw without the Save button: "Saved" alone
                    except Exception as exc:
                        st.error(T("ui.diagnose.save_failed", error=f"{type(exc).__name__}: {exc}"))
            if saved:
                st.markdown(T("ui.diagnose.saved"))
        mask = st.session_state.get("mask_identity", False)
        clean = redact_report(rep, mask_identity=mask)
        c2.download_button(T("ui.diagnose.download_md"), icon=":material/download:", data=lambda: render_markdown(clean),
                           file_name=f"gpu-doctor-{stamp}.md", mime="text/markdown", on_click="ignore", key="dl_md")
        c3.download_button(T("ui.diagnose.download_json"), icon=":material/download:",
                           data=lambda: json.dumps(clean, indent=2, ensure_ascii=False),
                           file_name=f"gpu-doctor-{stamp}.json", mime="application/json", on_click="ignore", key="dl_json")
        with c4:
            store = common.store() if saved else None
            if saved and store is not None:
                st.download_button(T("ui.diagnose.bundle"), icon=":material/package_2:",
                                   data=lambda: store.export_bundle(saved, mask_identity=mask),
                                   file_name=f"gpu-doctor-session-{saved[:8]}.json", mime="application/json",
                                   on_click="ignore", key="dl_bundle",
                                   help=T("ui.diagnose.bundle_help"))
            else:
                st.caption(T("ui.diagnose.save_for_link"))
        st.checkbox(T("ui.diagnose.mask_identity"), key="mask_identity", help=T("ui.diagnose.secrets_removed"))
        from ui.issue import copy_as_issue

        copy_as_issue(rep, mask_identity=mask, key="issue")
        try:
            from diagnostics.sessions import preview_report

            prev = preview_report(rep, mask_identity=mask)
            n = len(prev.get("replacements") or [])
            with st.expander(T("ui.diagnose.removed_one" if n == 1 else "ui.diagnose.removed_many", count=n),
                             icon=":material/shield:"):
                render.removed_table(prev.get("replacements") or [], prev.get("identity"))
        except Exception:  # an older redact module without previews: the downloads are redacted all the same
            pass
        if saved:
            st.caption(T("ui.diagnose.link_public"))
            st.code(common.session_link(saved), language=None)
            st.markdown(T("ui.diagnose.open_saved", url=f"{common.PATH_SESSIONS}?session={saved}"))


rep = st.session_state.get("report")
if rep and st.session_state.get("job") is None:
    st.divider()
    st.markdown('<div id="gd-results"></div>', unsafe_allow_html=True)
    if st.session_state.pop("_scroll_results", False):  # new results: bring them into view (static script)
        _scroll_script()
    if rep.get("source") == "pasted":
        st.caption(T("ui.diagnose.pasted_only"))
    if rep.get("stopped"):
        st.warning(T("ui.diagnose.stopped_report"), icon=":material/stop_circle:")
    with st.container(key="gd_verdict"):
        render.headline(rep)
    _share(rep)
    render.report(rep, show_headline=False)
