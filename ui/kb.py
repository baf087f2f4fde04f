"""Knowledge base (contributors): browse and search the entries; an entry's page with its cases."""
from __future__ import annotations

import streamlit as st

from diagnostics.kb import SEVERITIES
from diagnostics.service import get_kb
from ui import common, kbtools, render, safe

common.style()
kb, _ = get_kb()
by_id = kb.by_id()


def _open(eid: str | None) -> None:
    if eid:
        st.query_params["entry"] = eid
    elif "entry" in st.query_params:
        del st.query_params["entry"]


def _edit(text: str) -> None:
    st.session_state["editor_seed"] = text
    st.switch_page(common.page_file("kb_editor"))


def show_entry(eid: str) -> None:
    if st.button("All entries", icon=":material/arrow_back:", key="back"):
        _open(None)
        st.rerun()
    e = by_id.get(eid)
    if e is None:
        st.error("There is no knowledge-base entry with this id.")
        st.code(eid, language=None)
        return
    st.title(f"{render.SEV_GLYPH.get(e.severity, '')} {safe.md_inline(e.title, 500)}")
    st.caption(f"`{e.id}` · {render.SEV_WORD.get(e.severity, e.severity)}"
               f"{' · harmless (information only)' if e.benign else ''} · confidence {e.confidence:.0%}"
               f" · tags: {', '.join(safe.md_inline(t) for t in e.tags) or 'none'}"
               + (f" · ranks above: {', '.join(safe.md_inline(s) for s in e.supersedes)}" if e.supersedes else ""))
    left, right = st.columns([3, 2])
    with left:
        for title, body in (("What the user sees", e.symptoms), ("Why it happens", e.cause), ("How to fix it", e.fix)):
            st.subheader(title)
            st.markdown(safe.md_html(body), unsafe_allow_html=True)
        st.subheader("Sources")
        st.markdown(safe.md_html("\n".join(f"- <{u}>" for u in e.links)), unsafe_allow_html=True)
    with right:
        st.subheader("When it fires")
        st.code("\n".join(kbtools.describe(e.when)), language=None, wrap_lines=True)
        st.subheader("Its test cases")
        cases = kbtools.run_cases(e)
        passed = sum(c["ok"] for c in cases)
        (st.success if passed == len(cases) else st.error)(f"{passed} of {len(cases)} cases pass.")
        st.caption("Open a case to see its facts and log text.")
        for t, c in zip(e.tests, cases):
            mark = ":green[:material/check:]" if c["ok"] else ":red[:material/close:] **fails:**"
            with st.expander(f"{mark} must {'fire' if t.expect == 'fire' else 'stay silent'} — {safe.md_inline(t.name)}"):
                if t.facts:
                    st.dataframe([{"fact": k, "value": render.fmt_value(v)} for k, v in t.facts.items()],
                                 hide_index=True, width="stretch")
                if t.logs:
                    st.code(t.logs, language=None, wrap_lines=True)
    src = kbtools.entry_source(e)
    with st.expander("The YAML file"):
        st.code(src, language="yaml")
    c1, c2 = st.columns(2)
    if c1.button("Edit a copy in the editor", icon=":material/edit_note:", key="edit"):
        _edit(src)
    c2.download_button("Download the YAML", icon=":material/download:", data=src, file_name=f"{e.id}.yaml", mime="application/x-yaml",
                       key="download")


def list_entries() -> None:
    st.title("Knowledge base")
    st.caption(f"{len(kb.entries)} known failures of ROCm / PyTorch stacks, each with the facts and log lines that "
               f"reveal it, the cause and the fix. Knowledge-base version {safe.md_inline(kb.version)}.")
    if kb.errors:
        with st.expander(f"{len(kb.errors)} entry file(s) could not be loaded", icon=":material/warning:"):
            st.code("\n".join(str(x) for x in kb.errors), language=None, wrap_lines=True)
    tags = sorted({t for e in kb.entries for t in e.tags})
    c1, c2, c3 = st.columns([3, 2, 2])
    query = c1.text_input("Search symptoms, error text or ids", key="kbq", placeholder="e.g. invalid device function")
    sel_tags = c2.multiselect("Tags", tags, key="tags", placeholder="any tag")
    sevs = c3.multiselect("Severity", list(SEVERITIES), key="sev", placeholder="any severity",
                          format_func=lambda s: render.SEV_WORD.get(s, s))
    found = kbtools.search(kb.entries, query, sel_tags, sevs)
    st.caption(f"{len(found)} of {len(kb.entries)} entries")
    if not found:
        st.info("No entry matches. Try fewer words, or write a new entry in the editor.")
        return
    st.dataframe([{"open": f"{common.PATH_KB}?entry={e.id}", "title": e.title,
                   "severity": e.severity, "id": e.id, "tags": ", ".join(e.tags), "cases": len(e.tests)} for e in found],
                 hide_index=True, width="stretch",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗", width="small")})
    st.selectbox("Open an entry", [e.id for e in found], index=None, key="pick_entry",
                 format_func=lambda i: f"{by_id[i].title} ({i})", placeholder="Choose an entry…",
                 on_change=_picked)


def _picked() -> None:
    pick = st.session_state.get("pick_entry")
    st.session_state["pick_entry"] = None
    _open(pick)


eid = st.query_params.get("entry")
if eid:
    show_entry(eid.strip())
else:
    list_entries()
