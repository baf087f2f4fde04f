"""Sessions (support staff): search and filter saved sessions, open one by its link, review, compare, export."""
from __future__ import annotations

import datetime as dt
from typing import Any

import streamlit as st

from ui import auth, common, render, safe
from diagnostics.i18n import t
from ui.common import T, lang

PAGE_SIZE = 25
VERDICTS = (None, "problems", "unexplained", "incomplete", "healthy")  # the verdict filter; None: any verdict

common.style()
store = common.store()


def _verdict_cell(v: str | None) -> str:
    return render.verdict_word(v)


def _review_word(status: str | None, code: str | None = None) -> str:
    """A review status (new, investigating, resolved) in *code* (default: the visitor's language).  Used as a
    widget's format_func, which may be called outside the page run: those pass the language they were made in."""
    code = code or lang()
    if status is None:
        return t("ui.sessions.any_status", code)
    key = f"ui.sessions.review_{status}"
    word = t(key, code)
    return status if word == key else word


def _review_format(code: str):
    return lambda status: _review_word(status, code)


def _open(sid: str | None) -> None:
    if sid:
        st.query_params["session"] = sid
    elif "session" in st.query_params:
        del st.query_params["session"]


# --------------------------------------------------------------------------------------------------- one session
def _notes(sid: str) -> None:
    st.subheader(T("ui.sessions.notes"))
    notes = store.notes(sid)
    if not notes:
        st.caption(T("ui.sessions.no_notes"))
    for n in notes:
        st.markdown(f'<div class="gd-ev"><span class="gd-src">{safe.esc(n["author"])} · '
                    f'{safe.esc(common.fmt_time(n["created_at"]))}</span>\n{safe.esc(n["text"])}</div>',
                    unsafe_allow_html=True)
    if not auth.is_reviewer():
        st.caption(T("ui.sessions.reviewers_only_notes"))
        return
    with st.form("add_note", clear_on_submit=True):
        c1, c2 = st.columns([1, 3])
        author = c1.text_input(T("ui.sessions.your_name"), key="note_author")
        text = c2.text_area(T("ui.sessions.note"), key="note_text", height=90,
                            placeholder=T("ui.sessions.note_placeholder"))
        if st.form_submit_button(T("ui.sessions.add_note")):
            try:
                store.add_note(sid, author, text)
                st.session_state["_goto_tab"] = "notes"  # the rerun must not jump back to the Report tab
                st.session_state["_flash"] = T("ui.sessions.note_added")
                st.rerun()
            except Exception as exc:
                st.error(T("ui.sessions.note_failed", error=exc))


def _source_word(source: str | None) -> str:
    return T("ui.render.source_pasted") if source == "pasted" else T("ui.render.source_live")


def _change_word(change: str, same_source: bool) -> str:
    """added / removed / changed in words; between different sources a fact one side lacks was not checked there."""
    if change in ("added", "removed") and not same_source:
        return T("ui.sessions.not_checked_there")
    return T(f"ui.sessions.fact_{change}") if change in ("added", "removed", "changed") else change


def _session_label(r: dict[str, Any]) -> str:
    """A picker label one can tell sessions apart by: when, host, live or pasted, verdict, top finding, short id."""
    top = r.get("top_diagnosis_id") or T("ui.sessions.no_finding")
    src = _source_word(r.get("source")) if r.get("source") else ""
    return " · ".join(x for x in (common.fmt_time(r["created_at"]), r["host"], src, _verdict_cell(r["verdict"]), top,
                                  r["id"][:8]) if x)


def _compare(sid: str) -> None:
    st.subheader(T("ui.sessions.compare_with"))
    rows, _ = store.list_sessions(page_size=200)
    others = [r for r in rows if r["id"] != sid]
    if not others:
        st.caption(T("ui.sessions.no_other"))
        return
    labels = {r["id"]: _session_label(r) for r in others}
    other = st.selectbox(T("ui.sessions.other_session"), list(labels), format_func=lambda i: labels[i], index=None,
                         key="compare_with", placeholder=T("ui.sessions.choose_session"))
    if not other:
        return
    a, b = sorted([sid, other], key=lambda i: store.info(i)["created_at"] or "")
    from diagnostics.sessions import compare_sessions

    diff = compare_sessions(store, a, b)
    src_a, src_b = (store.get(i).get("source") for i in (a, b))
    same_source = src_a == src_b
    st.caption(T("ui.sessions.from_to", before_id=a[:8], after_id=b[:8],
                 before=render.verdict_word(diff["verdict"]["before"]), after=render.verdict_word(diff["verdict"]["after"])))
    if not same_source:  # a pasted log and a live run do not check the same things
        st.warning(T("ui.sessions.different_sources", before=_source_word(src_a), after=_source_word(src_b)),
                   icon=":material/compare_arrows:")
    gone = (":green[:material/check_circle:] " + T("ui.sessions.diff_gone") if same_source else
            ":gray[:material/help:] " + T("ui.sessions.diff_not_checked"))
    c1, c2, c3 = st.columns(3)
    for col, key, title in ((c1, "appeared", ":red[:material/add_circle:] " + T("ui.sessions.diff_new")),
                            (c2, "disappeared", gone),
                            (c3, "unchanged", ":gray[:material/drag_handle:] " + T("ui.sessions.diff_still"))):
        with col:
            st.markdown(f"**{title}**")
            if not diff[key]:
                st.caption(T("ui.sessions.none"))
            for d in diff[key]:
                st.markdown(f"- {render.SEV_GLYPH.get(d.get('severity'), '')} {safe.md_inline(d.get('title'))}")
    if diff["changed_facts"]:
        st.markdown(T("ui.sessions.facts_changed"))
        st.dataframe([{T("ui.render.col_fact"): f["name"],
                       T("ui.sessions.col_change"): _change_word(f["change"], same_source),
                       T("ui.sessions.col_before"): render.fmt_value(f["before"]),
                       T("ui.sessions.col_after"): render.fmt_value(f["after"])} for f in diff["changed_facts"]],
                     hide_index=True, width="stretch")
    if diff["changed_probes"]:
        st.markdown(T("ui.sessions.checks_changed"))
        absent = T("ui.sessions.absent") if same_source else T("ui.sessions.not_checked_there")
        st.dataframe([{T("ui.render.col_check"): render.probe_title(p["id"], None),
                       T("ui.sessions.col_before"): render.status_word(p["before"], p["before"] or absent),
                       T("ui.sessions.col_after"): render.status_word(p["after"], p["after"] or absent)}
                      for p in diff["changed_probes"]], hide_index=True, width="stretch")


def _exports(sid: str) -> None:
    # deferred downloads (data=callable): an export is built and handed to Streamlit's /media/ store only when a
    # logged-in visitor clicks, never ahead of time where /media/ (which has no login) would hold it
    st.subheader(T("ui.sessions.export"))
    mask = st.checkbox(T("ui.sessions.mask_identity"), key="export_mask")
    c1, c2, c3 = st.columns(3)
    c1.download_button(T("ui.sessions.bundle"), icon=":material/package_2:", data=lambda: store.export_bundle(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-session-{sid[:8]}.json", mime="application/json", on_click="ignore", key="exp_bundle")
    c2.download_button(T("ui.sessions.markdown_report"), icon=":material/download:", data=lambda: store.export_markdown(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-{sid[:8]}.md", mime="text/markdown", on_click="ignore", key="exp_md")
    c3.download_button(T("ui.sessions.html_report"), icon=":material/download:", data=lambda: store.export_html(sid, mask_identity=mask),
                       file_name=f"gpu-doctor-{sid[:8]}.html", mime="text/html", on_click="ignore", key="exp_html")
    st.caption(T("ui.sessions.secrets_removed"))
    from ui.issue import copy_as_issue

    copy_as_issue(store.get(sid), mask_identity=mask, key="exp_issue")
    if hasattr(store, "share_preview"):
        prev = store.share_preview(sid, mask_identity=mask)
        st.markdown(T("ui.sessions.what_was_removed"))
        render.removed_table(list(prev.get("redacted_at_save") or []) + list(prev.get("replacements") or []),
                             prev.get("identity"))


def show_session(sid: str) -> None:
    from diagnostics.sessions import STATUSES, SessionNotFound, rediagnose_session

    if st.button(T("ui.sessions.all_sessions"), icon=":material/arrow_back:", key="back"):
        _open(None)
        st.rerun()
    try:
        rep = store.get(sid)
        info = store.info(sid)
    except SessionNotFound:
        st.error(T("ui.sessions.no_such_session"))
        st.code(sid, language=None)
        return
    st.title(T("ui.sessions.session", sid=sid[:8]))
    meta = [safe.md_inline(common.fmt_time(rep.get("created_at"))),
            T("ui.render.meta_host", host=safe.md_inline(rep.get("host") or "?")),
            T("ui.render.source_pasted") if rep.get("source") == "pasted" else T("ui.render.source_live")]
    if info.get("imported"):
        meta.append(T("ui.render.imported"))
    meta += [T("ui.render.meta_kb", version=safe.md_inline(rep.get("kb_version") or "?")),
             T("ui.render.meta_tool", version=safe.md_inline(rep.get("tool_version") or "?"))]
    st.caption(" · ".join(meta))
    c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
    with c1:
        status = st.selectbox(T("ui.sessions.review_status"), STATUSES, index=STATUSES.index(info["status"]),
                              key=f"status_{sid}", format_func=_review_format(lang()), disabled=not auth.is_reviewer(),
                              help=None if auth.is_reviewer() else T("ui.sessions.reviewers_only_status"))
        if status != info["status"] and auth.is_reviewer():
            store.set_status(sid, status)
            st.toast(T("ui.sessions.status_set", status=_review_word(status)))
    with c2:
        if st.button(T("ui.sessions.rediagnose"), icon=":material/refresh:", key="rediagnose",
                     help=T("ui.sessions.rediagnose_help")):
            try:
                res = rediagnose_session(store, sid)
                st.session_state["rediag_msg"] = (
                    T("ui.sessions.no_change") if not (res["appeared"] or res["disappeared"]) else
                    T("ui.sessions.rediag_changes", new=len(res["appeared"]), gone=len(res["disappeared"])))
                st.rerun()
            except Exception as exc:
                st.error(T("ui.sessions.rediagnose_failed", error=f"{type(exc).__name__}: {exc}"))
    st.caption(T("ui.sessions.link"))
    st.code(common.session_link(sid), language=None)
    if st.session_state.get("rediag_msg"):
        st.info(T("ui.sessions.rediagnosed", result=st.session_state.pop("rediag_msg")))
    if st.session_state.get("_flash"):
        st.success(st.session_state.pop("_flash"), icon=":material/check_circle:")
    labels = [T("ui.sessions.report"), T("ui.sessions.notes_tab", count=info.get("note_count", 0)),
              T("ui.sessions.compare"), T("ui.sessions.export")]
    tab_key = f"tab_{sid}"
    if st.session_state.pop("_goto_tab", None) == "notes":
        st.session_state[tab_key] = labels[1]  # set before the tabs exist: the Notes tab stays open
    elif st.session_state.get(tab_key) not in labels:
        st.session_state.pop(tab_key, None)
    tab_report, tab_notes, tab_compare, tab_export = st.tabs(labels, key=tab_key, on_change="rerun")
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
        with st.expander(T("ui.sessions.delete_title")):
            sure = st.checkbox(T("ui.sessions.delete_confirm"), key="delete_sure")
            if st.button(T("ui.sessions.delete"), disabled=not sure, key="delete"):
                store.delete(sid)
                st.session_state["_flash"] = T("ui.sessions.deleted", sid=sid[:8])
                _open(None)
                st.rerun()


# --------------------------------------------------------------------------------------------------- the list
def _picked() -> None:
    pick = st.session_state.get("pick")
    st.session_state["pick"] = None
    _open(pick)


def _import() -> None:
    with st.expander(T("ui.sessions.import_title"), icon=":material/upload_file:"):
        f = st.file_uploader(T("ui.sessions.bundle_file"), key="bundle_file")
        if f is not None and st.button(T("ui.sessions.import"), key="import"):
            from diagnostics.sessions import BundleError

            try:
                res = store.import_bundle_ex(f.getvalue())
            except BundleError as exc:
                st.error(T("ui.sessions.bundle_refused", error=str(exc).removeprefix("refused: ")))  # not "refused: refused:"
                return
            except Exception as exc:
                st.error(T("ui.sessions.bundle_import_failed", error=f"{type(exc).__name__}: {exc}"))
                return
            for w in res["warnings"]:
                st.warning(w)
            st.success(T("ui.sessions.already_here") if res["existing"] else T("ui.sessions.imported"))
            st.button(T("ui.sessions.open_it"), key="open_imported", on_click=_open, args=(res["id"],))


def list_sessions() -> None:
    from diagnostics.sessions import STATUSES

    st.title(T("ui.sessions.title"))
    st.caption(T("ui.sessions.intro"))
    if st.session_state.get("_flash"):
        st.success(st.session_state.pop("_flash"), icon=":material/check_circle:")
    c1, c2, c3 = st.columns([3, 1, 1])
    query = c1.text_input(T("ui.sessions.search"), key="q", placeholder=T("ui.sessions.search_placeholder"))
    code = lang()
    verdict = c2.selectbox(T("ui.sessions.verdict"), VERDICTS, key="verdict",
                           format_func=lambda v: t("ui.sessions.any_verdict" if v is None else f"verdict.{v}", code))
    status = c3.selectbox(T("ui.sessions.review_status"), [None, *STATUSES], key="status_filter",
                          format_func=_review_format(code))
    with st.expander(T("ui.sessions.more_filters")):
        d1, d2, d3, d4 = st.columns(4)
        host = d1.text_input(T("ui.sessions.host_exact"), key="host")
        gpu = d2.text_input(T("ui.sessions.gpu_contains"), key="gpu")
        since = d3.date_input(T("ui.sessions.since"), value=None, key="since")
        until = d4.date_input(T("ui.sessions.until"), value=None, key="until")
    filters = dict(query=query, host=host.strip() or None, gpu=gpu.strip() or None, verdict=verdict,
                   status=status,
                   since=since.isoformat() if isinstance(since, dt.date) else None,
                   until=until.isoformat() if isinstance(until, dt.date) else None)
    key = repr(sorted(filters.items()))
    if st.session_state.get("_filters") != key:  # a new search starts on page 1
        st.session_state["_filters"] = key
        st.session_state["page"] = 1
    try:
        _, total = store.list_sessions(page_size=1, **filters)
    except Exception as exc:
        st.error(T("ui.kb.search_failed", error=exc))
        return
    pages = max(1, -(-total // PAGE_SIZE))
    if st.session_state.get("page", 1) > pages:
        st.session_state["page"] = pages
    rows, total = store.list_sessions(page=st.session_state.get("page", 1), page_size=PAGE_SIZE, **filters)
    if not total:
        st.info(T("ui.sessions.no_match") if any(filters.values()) else T("ui.sessions.none_saved"))
        _import()
        return
    col_open = T("ui.sessions.col_open")
    table = [{col_open: f"{common.PATH_SESSIONS}?session={r['id']}", T("ui.sessions.col_when"): common.fmt_time(r["created_at"]),
              T("ui.sessions.col_host"): r["host"], T("ui.sessions.col_verdict"): _verdict_cell(r["verdict"]),
              T("ui.sessions.col_top_cause"): r["top_diagnosis_id"] or "", "GPU": ", ".join(r["gpu_names"]),
              "torch": r["torch_version"] or "", T("ui.sessions.col_review"): _review_word(r["status"]),
              "id": r["id"][:8]} for r in rows]
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={col_open: st.column_config.LinkColumn(col_open, display_text=T("ui.sessions.open_link"),
                                                                      width="small")})
    n1, n2, n3 = st.columns([2, 1, 3])
    n1.number_input(T("ui.sessions.page_of", pages=pages), min_value=1, max_value=pages, step=1, key="page")
    n3.caption(T("ui.sessions.match_count", total=total, shown=len(rows)))
    labels = {r["id"]: _session_label(r) for r in rows}
    st.selectbox(T("ui.sessions.open_session"), list(labels), format_func=lambda i: labels[i], index=None, key="pick",
                 placeholder=T("ui.sessions.choose_on_page"), on_change=_picked)
    _import()


if store is not None:
    sid = st.query_params.get("session")
    if sid:
        show_session(sid.strip())
    else:
        list_sessions()
