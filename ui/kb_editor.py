"""Write a KB entry: start from the template, an existing entry or a saved session; validate as you type
(the same errors as `kb lint`), run the entry's cases, see which saved sessions it would match, download."""
from __future__ import annotations

import streamlit as st

from diagnostics.i18n import localized_entry, t
from diagnostics.service import get_kb
from diagnostics import contrib
from ui import common, render, safe
from ui.common import T, lang

MATCH_LIMIT = 300
LANG = lang()
# where a new text can start from: the option values are the English words (stable; what tests and links use),
# shown in the visitor's language
START_KEYS = ("ui.kb_editor.start_template", "ui.kb_editor.start_entry", "ui.kb_editor.start_session_new",
              "ui.kb_editor.start_session_case")
TEMPLATE, EXISTING, SESSION_NEW, SESSION_CASE = (t(k, "en") for k in START_KEYS)
START_LABEL = {t(k, "en"): k for k in START_KEYS}

common.style()
kb, _ = get_kb()
ids = [e.id for e in kb.entries]
st.session_state.pop("fleet_goto_editor", None)  # Fleet's "Draft a KB entry" brought us here
if "editor_seed" in st.session_state:  # "Edit a copy" on the Knowledge base page
    st.session_state["yaml"] = st.session_state.pop("editor_seed")
st.session_state.setdefault("yaml", contrib.template())

st.title(T("ui.kb_editor.title"))
st.caption(T("ui.kb_editor.intro"))
st.markdown(f":material/menu_book: [{T('ui.kb.guide_link')}]({common.PATH_KB}?guide=1)")

store = common.store()
recent: list[dict] = []
if store is not None:
    try:
        recent, _ = store.list_sessions(page_size=100)
    except Exception as exc:
        st.warning(T("ui.sessions.unavailable", error=exc))


def _session_label(r: dict) -> str:
    return (f"{common.fmt_time(r['created_at'])} · {r['host']} · {r['top_diagnosis_id'] or T('ui.sessions.no_finding')}"
            f" · {r['id'][:8]}")


def _entry_label(eid: str) -> str:
    e = kb.by_id()[eid]
    return f"{localized_entry(e, LANG)['title']} ({eid})"


def _load() -> None:
    """Put the chosen starting point into the editor (a callback: runs before the text area is drawn)."""
    how = st.session_state.get("start")
    sid = st.session_state.get("start_session")
    eid = st.session_state.get("start_entry")
    try:
        if how == TEMPLATE:
            st.session_state["yaml"] = contrib.template()
        elif how == EXISTING and eid:
            st.session_state["yaml"] = contrib.entry_source(kb.by_id()[eid])
        elif how == SESSION_NEW and sid:
            st.session_state["yaml"] = contrib.new_entry_from_session(store.get(sid))
        elif how == SESSION_CASE and sid and eid:
            case = contrib.session_case(store.get(sid), expect=st.session_state.get("start_expect", "fire"))
            st.session_state["yaml"] = contrib.add_case(contrib.entry_source(kb.by_id()[eid]), case)
        else:
            st.session_state["load_msg"] = T("ui.kb_editor.choose_first")
    except Exception as exc:
        st.session_state["load_msg"] = T("ui.kb_editor.load_failed", error=exc)


def _outcome(word: str) -> str:
    """fire / silent / unknown in the visitor's language."""
    return T(f"ui.kb_editor.expect_{word}") if word in ("fire", "silent", "unknown") else str(word)


def _cases_table(cases: list[dict]) -> None:
    """The entry's cases, three narrow columns so that the table fits the right-hand column (and becomes one card
    per case on a phone): pass/fail, the case's name with its line, and "expected -> got" in words."""
    head = f"| | {T('ui.kb_editor.col_case')} | {T('ui.kb_editor.col_result')} |"
    rows = [head, "|---|---|---|"]
    for c in cases:
        mark = ":green[:material/check:]" if c["ok"] else ":red[:material/close:]"
        got = _outcome(c["got"]) if c["ok"] else f"**{_outcome(c['got'])}**"
        rows.append(f"| {mark} | {safe.md_inline(c['case'], 160)}   :gray[{T('ui.kb_editor.case_line', line=c['line'])}]"
                    f" | {_outcome(c['expect'])} → {got} |")
    st.markdown("\n".join(rows))


with st.expander(T("ui.kb_editor.start_from_placeholder"), expanded=False):
    how = st.radio(T("ui.kb_editor.start_from"), [TEMPLATE, EXISTING, SESSION_NEW, SESSION_CASE], key="start",
                   horizontal=True, label_visibility="collapsed", format_func=lambda o: t(START_LABEL.get(o, o), LANG))
    if how in (SESSION_NEW, SESSION_CASE):
        if recent:
            labels = {r["id"]: _session_label(r) for r in recent}
            st.selectbox(T("ui.kb_editor.saved_session"), list(labels), format_func=lambda i: labels[i],
                         key="start_session")
        else:
            st.info(T("ui.kb_editor.no_sessions"))
    if how in (EXISTING, SESSION_CASE):
        st.selectbox(T("ui.kb_editor.entry"), ids, key="start_entry", format_func=_entry_label)
    if how == SESSION_CASE:
        st.radio(T("ui.kb_editor.session_expect"), ["fire", "silent"], key="start_expect", horizontal=True,
                 format_func=lambda o: t(f"ui.kb_editor.expect_{o}", LANG))
    st.button(T("ui.kb_editor.load"), on_click=_load, key="load")
    if st.session_state.get("load_msg"):
        st.warning(st.session_state.pop("load_msg"))

left, right = st.columns([3, 2])
with left:
    text = st.text_area(T("ui.kb_editor.entry_yaml"), key="yaml", height=560, help=T("ui.kb_editor.entry_help"))
v = contrib.validate(text or "", existing_ids=ids, lang=LANG)
with right:
    st.subheader(T("ui.kb_editor.check"))
    if v.error is not None:
        st.error(T("ui.kb_editor.error_at", line=v.error.line, col=v.error.col,
                   message=safe.md_inline(v.error.message, 500)))
        st.code(contrib.error_context(text or "", v.error), language=None)
        st.caption(T("ui.kb_editor.lint_reports"))
        st.code(str(v.error), language=None, wrap_lines=True)
    else:
        e = v.entry
        failing = [c for c in v.cases if not c["ok"]]
        passed = len(v.cases) - len(failing)
        # one status that tells the whole story: green only when `kb lint` accepts it AND every case passes
        if v.template:  # the untouched template parses, but it is not an entry yet
            st.warning(T("ui.kb_editor.still_template", parts=", ".join(f"`{p}`" for p in v.template)),
                       icon=":material/edit_note:")
        elif v.lint_errors:
            st.error(T("ui.kb_editor.lint_failed", count=len(v.lint_errors)))
        if failing:
            names = "; ".join(T("ui.kb_editor.case_failing_name", name=safe.md_inline(c["case"], 120), line=c["line"],
                                expect=_outcome(c["expect"]), got=_outcome(c["got"])) for c in failing[:5])
            if len(failing) > 5:
                names += "; …"
            st.error(T("ui.kb_editor.cases_failing", passed=passed, total=len(v.cases), names=names),
                     icon=":material/error:")
        elif not (v.template or v.lint_errors):
            st.success(T("ui.kb_editor.valid", id=e.id, total=len(v.cases)), icon=":material/check_circle:")
        for f in v.lint:  # dangerous steps without a caveat (errors), stale dates (warnings): `kb lint`'s own
            (st.error if f.level == "error" else st.info)(
                T("ui.kb_editor.error_at", line=f.line, col=f.col, message=safe.md_inline(f.message, 600)))
        for w in v.warnings:
            st.info(w)
        st.markdown("**" + T("ui.kb_editor.cases_pass", passed=passed, total=len(v.cases)) + "**")
        _cases_table(failing + [c for c in v.cases if c["ok"]])  # failing cases first
        st.subheader(T("ui.kb_editor.sessions_matched"))
        if store is None:
            st.caption(T("ui.kb_editor.no_db"))
        else:
            # the same text against the same set of sessions gives the same answer: reuse it between reruns
            key = (text, store.count(), recent[0]["updated_at"] if recent else None)
            cached = st.session_state.get("_matches")
            if cached and cached[0] == key:
                hits, seen = cached[1]
            else:
                hits, seen = contrib.sessions_matching(e, store, limit=MATCH_LIMIT)
                st.session_state["_matches"] = (key, (hits, seen))
            if not hits:
                st.caption(T("ui.kb_editor.recent_none", seen=seen))
            else:
                st.caption(T("ui.kb_editor.recent_hits", hits=len(hits), seen=seen))
                col_open = T("ui.sessions.col_open")
                st.dataframe([{col_open: f"{common.PATH_SESSIONS}?session={h['id']}",
                               T("ui.sessions.col_when"): common.fmt_time(h["created_at"]),
                               T("ui.sessions.col_host"): h["host"],
                               T("ui.sessions.col_verdict"): render.verdict_word(h["verdict"]),
                               T("ui.kb_editor.col_already"): T("value.yes") if h["already"] else T("ui.kb_editor.new")}
                              for h in hits], hide_index=True, width="stretch",
                             column_config={col_open: st.column_config.LinkColumn(
                                 col_open, display_text=T("ui.sessions.open_link"))})
        st.subheader(T("ui.kb_editor.preview"))
        with st.container(border=True):
            st.markdown(f"{render.SEV_GLYPH.get(e.severity, '')} **{safe.md_inline(e.title, 500)}**")
            st.markdown(safe.md_html(e.fix), unsafe_allow_html=True)
    # only an entry `kb lint` accepts and whose own cases all pass can be downloaded (issue 18)
    blocked = []
    if v.error is not None:
        blocked.append(T("ui.kb_editor.blocked_lint"))
    else:
        if v.template:
            blocked.append(T("ui.kb_editor.blocked_template"))
        if v.lint_errors:
            blocked.append(T("ui.kb_editor.blocked_lint"))
        failing = sum(not c["ok"] for c in v.cases)
        if failing:
            blocked.append(T("ui.kb_editor.blocked_cases", count=failing))
    st.download_button(T("ui.kb.download_yaml"), icon=":material/download:", data=lambda: (text or "").encode("utf-8"),
                       file_name=f"{contrib.guess_id(text or '')}.yaml", mime="application/x-yaml",
                       disabled=bool(blocked), on_click="ignore", key="download_yaml", help=T("ui.kb_editor.how_to_submit"))
    if blocked:
        st.caption(T("ui.kb_editor.download_blocked", reasons="; ".join(blocked)))
