"""Sessions (support staff): search and filter saved sessions, open one by its link, review, compare, export."""
from __future__ import annotations

import datetime as dt
from typing import Any

import streamlit as st

from ui import auth, common, render, safe

PAGE_SIZE = 25
VERDICTS = {"any verdict": None, "problems found": "problems", "incomplete": "incomplete",
            "no known problem": "healthy"}
STATUS_GLYPH = {"new": "", "investigating": "", "resolved": ""}

common.style()
store = common.store()


def _verdict_cell(v: str | None) -> str:
    return {"problems": "problems found", "incomplete": "incomplete", "healthy": "no known problem"}.get(v or "", v or "")


def _open(sid: str | None) -> None:
    if sid:
        st.query_params["session"] = sid
    elif "session" in st.query_params:
        del st.query_params["session"]


# --------------------------------------------------------------------------------------------------- one session
def _notes(sid: str) -> None:
    st.subheader("Notes")
    notes = store.notes(sid)
    if not notes:
        st.caption("No notes yet.")
    for n in notes:
        st.markdown(f'<div class="gd-ev"><span class="gd-src">{safe.esc(n["author"])} · '
                    f'{safe.esc(common.fmt_time(n["created_at"]))}</span>\n{safe.esc(n["text"])}</div>',
                    unsafe_allow_html=True)
    if not auth.is_reviewer():
        st.caption("Only reviewers can add notes.")
        return
    with st.form("add_note", clear_on_submit=True):
        c1, c2 = st.columns([1, 3])
        author = c1.text_input("Your name", key="note_author")
        text = c2.text_area("Note", key="note_text", height=90,
                            placeholder="What you found, what you asked the user to try…")
        if st.form_submit_button("Add note"):
            try:
                store.add_note(sid, author, text)
                st.rerun()
            except Exception as exc:
                st.error(f"The note was not added: {exc}")


def _compare(sid: str) -> None:
    st.subheader("Compare with another session")
    rows, _ = store.list_sessions(page_size=200)
    others = [r for r in rows if r["id"] != sid]
    if not others:
        st.caption("There is no other session to compare with.")
        return
    labels = {r["id"]: f"{common.fmt_time(r['created_at'])} · {r['host']} · {_verdict_cell(r['verdict'])} · "
                       f"{r['id'][:8]}" for r in others}
    other = st.selectbox("Earlier or later session", list(labels), format_func=lambda i: labels[i], index=None,
                         key="compare_with", placeholder="Choose a session…")
    if not other:
        return
    a, b = sorted([sid, other], key=lambda i: store.info(i)["created_at"] or "")
    diff = store.compare(a, b)
    st.caption(f"From {a[:8]} (before) to {b[:8]} (after): "
               f"{render.VERDICT_WORD.get(diff['verdict']['before'], diff['verdict']['before'])} → "
               f"{render.VERDICT_WORD.get(diff['verdict']['after'], diff['verdict']['after'])}")
    c1, c2, c3 = st.columns(3)
    for col, key, title in ((c1, "appeared", ":red[:material/add_circle:] New"), (c2, "disappeared", ":green[:material/check_circle:] Gone"),
                            (c3, "unchanged", ":gray[:material/drag_handle:] Still there")):
        with col:
            st.markdown(f"**{title}**")
            if not diff[key]:
                st.caption("none")
            for d in diff[key]:
                st.markdown(f"- {render.SEV_GLYPH.get(d.get('severity'), '')} {safe.md_inline(d.get('title'))}")
    if diff["changed_facts"]:
        st.markdown("**Facts that changed**")
        st.dataframe([{"fact": f["name"], "change": f["change"], "before": render.fmt_value(f["before"]),
                       "after": render.fmt_value(f["after"])} for f in diff["changed_facts"]],
                     hide_index=True, width="stretch")
    if diff["changed_probes"]:
        st.markdown("**Checks whose result changed**")
        st.dataframe([{"check": p["id"], "before": render.STATUS_WORD.get(p["before"], p["before"] or "(absent)"),
                       "after": render.STATUS_WORD.get(p["after"], p["after"] or "(absent)")}
                      for p in diff["changed_probes"]], hide_index=True, width="stretch")


def _exports(sid: str) -> None:
    st.subheader("Export")
    mask = st.checkbox("Hide the host and user names", key="export_mask")
    c1, c2, c3 = st.columns(3)
    c1.download_button("Bundle (for another GPU doctor)", icon=":material/package_2:", data= store.export_bundle(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-session-{sid[:8]}.json", mime="application/json", key="exp_bundle")
    c2.download_button("Markdown report", icon=":material/download:", data= store.export_markdown(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-{sid[:8]}.md", mime="text/markdown", key="exp_md")
    c3.download_button("HTML report", icon=":material/download:", data= store.export_html(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-{sid[:8]}.html", mime="text/html", key="exp_html")
    st.caption("Secrets (tokens, passwords, keys) were removed when the session was saved.")
    if hasattr(store, "share_preview"):
        prev = store.share_preview(sid, mask_identity=mask)
        st.markdown("**What was removed**")
        render.removed_table(list(prev.get("redacted_at_save") or []) + list(prev.get("replacements") or []),
                             prev.get("identity"))


def show_session(sid: str) -> None:
    from diagnostics.store import STATUSES, SessionNotFound

    if st.button("All sessions", icon=":material/arrow_back:", key="back"):
        _open(None)
        st.rerun()
    try:
        rep = store.get(sid)
        info = store.info(sid)
    except SessionNotFound:
        st.error("There is no saved session with this id. It may have been deleted, or the link is incomplete.")
        st.code(sid, language=None)
        return
    st.title(f"Session {sid[:8]}")
    st.caption(f"{safe.md_inline(common.fmt_time(rep.get('created_at')))} · host {safe.md_inline(rep.get('host') or '?')}"
               f" · {'pasted text' if rep.get('source') == 'pasted' else 'live run'}"
               f"{' · imported' if info.get('imported') else ''} · knowledge base {safe.md_inline(rep.get('kb_version') or '?')}"
               f" · tool {safe.md_inline(rep.get('tool_version') or '?')}")
    c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
    with c1:
        status = st.selectbox("Review status", STATUSES, index=STATUSES.index(info["status"]), key=f"status_{sid}",
                              disabled=not auth.is_reviewer(),
                              help=None if auth.is_reviewer() else "Only reviewers can change the status.")
        if status != info["status"] and auth.is_reviewer():
            store.set_status(sid, status)
            st.toast(f"Status set to {status}")
    with c2:
        if st.button("Re-diagnose with today's knowledge base", icon=":material/refresh:", key="rediagnose",
                     help="Matches the stored facts and logs against the current knowledge base and notes what changed."):
            try:
                res = store.rediagnose(sid)
                st.session_state["rediag_msg"] = (
                    "No change." if not (res["appeared"] or res["disappeared"]) else
                    f"{len(res['appeared'])} new finding(s), {len(res['disappeared'])} gone.")
                st.rerun()
            except Exception as exc:
                st.error(f"Re-diagnosis failed: {type(exc).__name__}: {exc}")
    st.caption("Link to this session:")
    st.code(common.session_link(sid), language=None)
    if st.session_state.get("rediag_msg"):
        st.info("Re-diagnosed. " + st.session_state.pop("rediag_msg"))
    tab_report, tab_notes, tab_compare, tab_export = st.tabs(
        ["Report", f"Notes ({info.get('note_count', 0)})", "Compare", "Export"])
    with tab_report:
        render.report(rep)
    with tab_notes:
        _notes(sid)
    with tab_compare:
        _compare(sid)
    with tab_export:
        _exports(sid)
        if not auth.is_reviewer():
            return
        with st.expander("Delete this session"):
            sure = st.checkbox("Yes, delete it and its notes for good", key="delete_sure")
            if st.button("Delete", disabled=not sure, key="delete"):
                store.delete(sid)
                _open(None)
                st.rerun()


# --------------------------------------------------------------------------------------------------- the list
def _picked() -> None:
    pick = st.session_state.get("pick")
    st.session_state["pick"] = None
    _open(pick)


def _import() -> None:
    with st.expander("Import a bundle someone sent you", icon=":material/upload_file:"):
        f = st.file_uploader("Bundle file (.json)", key="bundle_file")
        if f is not None and st.button("Import", key="import"):
            from diagnostics.store import BundleError

            try:
                res = store.import_bundle_ex(f.getvalue())
            except BundleError as exc:
                st.error(f"The bundle was refused: {exc}")
                return
            except Exception as exc:
                st.error(f"The bundle could not be imported: {type(exc).__name__}: {exc}")
                return
            for w in res["warnings"]:
                st.warning(w)
            st.success("Already here." if res["existing"] else "Imported.")
            st.button("Open it", key="open_imported", on_click=_open, args=(res["id"],))


def list_sessions() -> None:
    from diagnostics.store import STATUSES

    st.title("Saved sessions")
    st.caption("Every saved diagnosis, newest first. Search by host, GPU, gfx target, torch or ROCm version, "
               "cause or session id.")
    c1, c2, c3 = st.columns([3, 1, 1])
    query = c1.text_input("Search", key="q", placeholder="e.g. gfx1100 rocm6.2 hip-no-binary")
    verdict = VERDICTS[c2.selectbox("Verdict", list(VERDICTS), key="verdict")]
    status = c3.selectbox("Review status", ["any status", *STATUSES], key="status_filter")
    with st.expander("More filters"):
        d1, d2, d3, d4 = st.columns(4)
        host = d1.text_input("Host (exact)", key="host")
        gpu = d2.text_input("GPU name contains", key="gpu")
        since = d3.date_input("From", value=None, key="since")
        until = d4.date_input("Until", value=None, key="until")
    filters = dict(query=query, host=host.strip() or None, gpu=gpu.strip() or None, verdict=verdict,
                   status=None if status == "any status" else status,
                   since=since.isoformat() if isinstance(since, dt.date) else None,
                   until=until.isoformat() if isinstance(until, dt.date) else None)
    key = repr(sorted(filters.items()))
    if st.session_state.get("_filters") != key:  # a new search starts on page 1
        st.session_state["_filters"] = key
        st.session_state["page"] = 1
    try:
        _, total = store.list_sessions(page_size=1, **filters)
    except Exception as exc:
        st.error(f"The search failed: {exc}")
        return
    pages = max(1, -(-total // PAGE_SIZE))
    if st.session_state.get("page", 1) > pages:
        st.session_state["page"] = pages
    rows, total = store.list_sessions(page=st.session_state.get("page", 1), page_size=PAGE_SIZE, **filters)
    if not total:
        st.info("No saved session matches." if any(filters.values()) else
                "No session saved yet. Run a diagnosis and press *Save this session*.")
        _import()
        return
    table = [{"open": f"{common.PATH_SESSIONS}?session={r['id']}", "when": common.fmt_time(r["created_at"]),
              "host": r["host"], "verdict": _verdict_cell(r["verdict"]),
              "top cause": r["top_diagnosis_id"] or "", "GPU": ", ".join(r["gpu_names"]),
              "torch": r["torch_version"] or "", "review": r["status"],
              "id": r["id"][:8]} for r in rows]
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗", width="small")})
    n1, n2, n3 = st.columns([2, 1, 3])
    n1.number_input(f"Page (of {pages})", min_value=1, max_value=pages, step=1, key="page")
    n3.caption(f"{total} session(s) match; showing {len(rows)}.")
    labels = {r["id"]: f"{common.fmt_time(r['created_at'])} · {r['host']} · {_verdict_cell(r['verdict'])} · "
                       f"{r['top_diagnosis_id'] or 'no finding'} · {r['id'][:8]}" for r in rows}
    st.selectbox("Open a session", list(labels), format_func=lambda i: labels[i], index=None, key="pick",
                 placeholder="Choose a session from this page…", on_change=_picked)
    _import()


if store is not None:
    sid = st.query_params.get("session")
    if sid:
        show_session(sid.strip())
    else:
        list_sessions()
