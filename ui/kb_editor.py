"""Write a KB entry: start from the template, an existing entry or a saved session; validate as you type
(the same errors as `kb lint`), run the entry's cases, see which saved sessions it would match, download."""
from __future__ import annotations

import streamlit as st

from diagnostics.service import get_kb
from ui import common, kbtools, render, safe

MATCH_LIMIT = 300

common.style()
kb, _ = get_kb()
ids = [e.id for e in kb.entries]
if "editor_seed" in st.session_state:  # "Edit a copy" on the Knowledge base page
    st.session_state["yaml"] = st.session_state.pop("editor_seed")
st.session_state.setdefault("yaml", kbtools.template())

st.title("Write a knowledge-base entry")
st.caption("An entry is data: conditions over facts and log lines, the cause and the fix, and its own test "
           "cases. Check it here, download the YAML and open a pull request that adds it as kb/<id>.yaml.")

store = common.store()
recent: list[dict] = []
if store is not None:
    try:
        recent, _ = store.list_sessions(page_size=100)
    except Exception as exc:
        st.warning(f"Saved sessions are not available: {exc}")


def _session_label(r: dict) -> str:
    return f"{common.fmt_time(r['created_at'])} · {r['host']} · {r['top_diagnosis_id'] or 'no finding'} · {r['id'][:8]}"


def _load() -> None:
    """Put the chosen starting point into the editor (a callback: runs before the text area is drawn)."""
    how = st.session_state.get("start")
    sid = st.session_state.get("start_session")
    eid = st.session_state.get("start_entry")
    try:
        if how == "the template":
            st.session_state["yaml"] = kbtools.template()
        elif how == "an existing entry" and eid:
            st.session_state["yaml"] = kbtools.entry_source(kb.by_id()[eid])
        elif how == "a saved session, as a new entry" and sid:
            st.session_state["yaml"] = kbtools.new_entry_from_session(store.get(sid))
        elif how == "a saved session, as a test case of an existing entry" and sid and eid:
            case = kbtools.session_case(store.get(sid), expect=st.session_state.get("start_expect", "fire"))
            st.session_state["yaml"] = kbtools.add_case(kbtools.entry_source(kb.by_id()[eid]), case)
        else:
            st.session_state["load_msg"] = "Choose what to start from first."
    except Exception as exc:
        st.session_state["load_msg"] = f"Could not load it: {exc}"


with st.expander("Start from…", expanded=False):
    how = st.radio("Start from", ["the template", "an existing entry", "a saved session, as a new entry",
                                  "a saved session, as a test case of an existing entry"], key="start",
                   horizontal=True, label_visibility="collapsed")
    if "session" in how:
        if recent:
            labels = {r["id"]: _session_label(r) for r in recent}
            st.selectbox("Saved session", list(labels), format_func=lambda i: labels[i], key="start_session")
        else:
            st.info("No saved session yet: save one on the Diagnose page first.")
    if "existing entry" in how:
        st.selectbox("Entry", ids, key="start_entry", format_func=lambda i: f"{kb.by_id()[i].title} ({i})")
    if "test case" in how:
        st.radio("The session should make the entry", ["fire", "silent"], key="start_expect", horizontal=True)
    st.button("Load into the editor (replaces the text below)", on_click=_load, key="load")
    if st.session_state.get("load_msg"):
        st.warning(st.session_state.pop("load_msg"))

left, right = st.columns([3, 2])
with left:
    text = st.text_area("Entry (YAML)", key="yaml", height=560,
                        help="Checked whenever the text area loses focus or you press Ctrl+Enter.")
v = kbtools.validate(text or "", existing_ids=ids)
with right:
    st.subheader("Check")
    if v.error is not None:
        st.error(f"**Line {v.error.line}, column {v.error.col}:** {safe.md_inline(v.error.message, 500)}")
        st.code(kbtools.error_context(text or "", v.error), language=None)
        st.caption("`kb lint` reports it as:")
        st.code(str(v.error), language=None, wrap_lines=True)
    else:
        e = v.entry
        st.success(f"Valid entry `{e.id}`: `kb lint` accepts it.")
        for w in v.warnings:
            st.info(w)
        passed = sum(c["ok"] for c in v.cases)
        (st.success if passed == len(v.cases) else st.error)(f"Its own cases: {passed} of {len(v.cases)} pass.")
        st.markdown("\n".join(["| | Case | Line | Expected | Got |", "|---|---|---:|---|---|"] + [
            f"| {':green[:material/check:]' if c['ok'] else ':red[:material/close:]'} | {safe.md_inline(c['case'], 90)} | "
            f"{c['line']} | {c['expect']} | {c['got']} |" for c in v.cases]))
        st.subheader("Saved sessions it would match")
        if store is None:
            st.caption("The session database is not available.")
        else:
            # the same text against the same set of sessions gives the same answer: reuse it between reruns
            key = (text, store.count(), recent[0]["updated_at"] if recent else None)
            cached = st.session_state.get("_matches")
            if cached and cached[0] == key:
                hits, seen = cached[1]
            else:
                hits, seen = kbtools.sessions_matching(e, store, limit=MATCH_LIMIT)
                st.session_state["_matches"] = (key, (hits, seen))
            if not hits:
                st.caption(f"None of the {seen} most recent saved sessions.")
            else:
                st.caption(f"{len(hits)} of the {seen} most recent saved sessions.")
                st.dataframe([{"open": f"{common.PATH_SESSIONS}?session={h['id']}",
                               "when": common.fmt_time(h["created_at"]), "host": h["host"],
                               "verdict": h["verdict"], "already diagnosed so": "yes" if h["already"] else "new"}
                              for h in hits], hide_index=True, width="stretch",
                             column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗")})
        st.subheader("Preview")
        with st.container(border=True):
            st.markdown(f"{render.SEV_GLYPH.get(e.severity, '')} **{safe.md_inline(e.title, 500)}**")
            st.markdown(safe.md_html(e.fix), unsafe_allow_html=True)
    st.download_button("Download the YAML", icon=":material/download:", data=(text or "").encode("utf-8"),
                       file_name=f"{kbtools.guess_id(text or '')}.yaml", mime="application/x-yaml",
                       disabled=v.error is not None, key="download_yaml",
                       help="Save it as kb/<id>.yaml in a clone of the project, run "
                            "`python -m diagnostics kb test --run <id>`, and open a pull request.")
