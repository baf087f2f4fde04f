"""Knowledge base (contributors): browse and search the entries; an entry's page with its cases."""
from __future__ import annotations

import streamlit as st

from diagnostics.i18n import localized_entry, t
from diagnostics.contrib import KB_DIR, SEVERITIES
from diagnostics.service import get_kb
from diagnostics import contrib
from ui import common, render, safe
from ui.common import T, lang

common.style()
kb, _ = get_kb()
by_id = kb.by_id()
LANG = lang()


def _title(e) -> str:
    """The entry's title in the visitor's language (English where it has no translation)."""
    return localized_entry(e, LANG)["title"] if LANG != "en" else e.title


def _open(eid: str | None) -> None:
    if eid:
        st.query_params["entry"] = eid
    elif "entry" in st.query_params:
        del st.query_params["entry"]


def _edit(text: str) -> None:
    st.session_state["editor_seed"] = text
    st.switch_page(common.page_file("kb_editor"))


def show_entry(eid: str) -> None:
    if st.button(T("ui.kb.all_entries"), icon=":material/arrow_back:", key="back"):
        _open(None)
        st.rerun()
    e = by_id.get(eid)
    if e is None:
        st.error(T("ui.kb.no_such_entry"))
        st.code(eid, language=None)
        return
    loc = localized_entry(e, LANG)
    st.title(f"{render.SEV_GLYPH.get(e.severity, '')} {safe.md_inline(loc['title'], 500)}")
    meta = [f"`{e.id}`", render.sev_word(e.severity)]
    if e.benign:
        meta.append(T("ui.kb.harmless"))
    meta.append(T("ui.render.confidence", confidence=e.confidence))
    meta.append(T("ui.kb.tags_line", tags=", ".join(safe.md_inline(t) for t in e.tags) or T("ui.sessions.none")))
    if e.supersedes:
        meta.append(T("ui.kb.ranks_above", ids=", ".join(safe.md_inline(s) for s in e.supersedes)))
    st.caption(" · ".join(meta))
    if LANG != "en":
        if loc["lang"] != LANG:
            st.info(T("ui.kb.translation_missing"), icon=":material/translate:")
        elif loc["stale"]:
            st.warning(T("ui.kb.translation_stale"), icon=":material/translate:")
    left, right = st.columns([3, 2])
    with left:
        for key, field in (("ui.kb.what_user_sees", "symptoms"), ("ui.kb.why", "cause"), ("ui.kb.how_to_fix", "fix")):
            st.subheader(T(key))
            st.markdown(safe.md_html(loc[field]), unsafe_allow_html=True)
        st.subheader(T("ui.kb.sources"))
        st.markdown(safe.md_html("\n".join(f"- <{u}>" for u in e.links)), unsafe_allow_html=True)
    with right:
        st.subheader(T("ui.kb.when_it_fires"))
        st.code("\n".join(contrib.describe(e.when, lang=LANG)), language=None, wrap_lines=True)
        st.subheader(T("ui.kb.test_cases"))
        cases = contrib.run_cases(e)
        passed = sum(c["ok"] for c in cases)
        (st.success if passed == len(cases) else st.error)(T("ui.kb.cases_pass", passed=passed, total=len(cases)))
        st.caption(T("ui.kb.open_case") + " " + guide_link())
        for t, c in zip(e.tests, cases):
            mark = ":green[:material/check:]" if c["ok"] else ":red[:material/close:] " + T("ui.kb.fails")
            must = {"fire": "ui.kb_editor.must_fire", "unknown": "ui.kb_editor.must_be_unknown"}.get(
                t.expect, "ui.kb_editor.must_stay_silent")
            with st.expander(f"{mark} {T(must, name=safe.md_inline(t.name))}"):
                if t.facts:
                    st.dataframe([{T("ui.render.col_fact"): k, T("ui.render.col_value"): render.fmt_value(v)}
                                  for k, v in t.facts.items()], hide_index=True, width="stretch")
                if t.logs:
                    st.code(t.logs, language=None, wrap_lines=True)
    src = contrib.entry_source(e)
    with st.expander(T("ui.kb.yaml_file")):
        st.code(src, language="yaml")
    c1, c2 = st.columns(2)
    if c1.button(T("ui.kb.edit_copy"), icon=":material/edit_note:", key="edit"):
        _edit(src)
    c2.download_button(T("ui.kb.download_yaml"), icon=":material/download:", data=lambda: src, file_name=f"{e.id}.yaml", mime="application/x-yaml",
                       on_click="ignore", key="download")


def list_entries() -> None:
    st.title(T("ui.app.nav_kb"))
    st.caption(T("ui.kb.intro", count=len(kb.entries), version=safe.md_inline(kb.version)))
    st.markdown(f":material/menu_book: {guide_link()}")
    if kb.errors:
        with st.expander(T("ui.kb.load_errors", count=len(kb.errors)), icon=":material/warning:"):
            st.code("\n".join(str(x) for x in kb.errors), language=None, wrap_lines=True)
    tags = sorted({t for e in kb.entries for t in e.tags})
    c1, c2, c3 = st.columns([3, 2, 2])
    query = c1.text_input(T("ui.kb.search_label"), key="kbq", placeholder=T("ui.kb.search_placeholder"))
    sel_tags = c2.multiselect(T("ui.kb.tags"), tags, key="tags", placeholder=T("ui.kb.any_tag"))
    sevs = c3.multiselect(T("ui.kb.severity"), list(SEVERITIES), key="sev", placeholder=T("ui.kb.any_severity"),
                          format_func=lambda s: t(f"severity_word.{s}", LANG))
    try:
        found = contrib.search(kb.entries, query, sel_tags, sevs)
    except Exception as exc:  # the retrieval failed: say so, and fall back to the whole list
        st.warning(T("ui.kb.search_failed", error=exc))
        found = contrib.search(kb.entries, "", sel_tags, sevs)
    st.caption(T("ui.kb.count", found=len(found), total=len(kb.entries))
               + (" " + T("ui.kb.ranked") if (query or "").strip() else ""))
    if not found:
        st.info(T("ui.kb.no_match"))
        return
    entry_list(found)
    st.selectbox(T("ui.kb.open_entry"), [e.id for e in found], index=None, key="pick_entry",
                 format_func=lambda i: f"{_title(by_id[i])} ({i})", placeholder=T("ui.kb.choose_entry"),
                 on_change=_picked)


def entry_list(found: list) -> None:
    """Every entry found, one line each with its whole title (a link to its page), severity, id, tags and
    cases: a list that wraps, so no title is cut, on a phone either."""
    lines = []
    for e in found:
        tags = " ".join(f"`{safe.md_inline(tg, 40)}`" for tg in e.tags)
        lines.append(f"- {render.SEV_GLYPH.get(e.severity, '')} [{safe.md_inline(_title(e), 300)}]"
                     f"({common.PATH_KB}?entry={e.id})  \n"
                     f"  :gray[{render.sev_word(e.severity)} · `{e.id}` · "
                     f"{T('ui.kb.cases_count', count=len(e.tests))}] {tags}")
    with st.container(key="kb_list"):
        st.markdown("\n".join(lines))


def guide_link() -> str:
    """A Markdown link to the contributor guide (kb/README.md, shown by this page)."""
    return f"[{T('ui.kb.guide_link')}]({common.PATH_KB}?guide=1)"


def show_guide() -> None:
    """kb/README.md, the contributor guide, as it is in the project (trusted text of the repository)."""
    if st.button(T("ui.kb.all_entries"), icon=":material/arrow_back:", key="back"):
        del st.query_params["guide"]
        st.rerun()
    st.caption(T("ui.kb.guide_caption"))
    try:
        text = (KB_DIR / "README.md").read_text(encoding="utf-8")
    except OSError as exc:
        st.error(T("ui.kb.guide_missing", error=exc))
        return
    st.markdown(text)


def _picked() -> None:
    pick = st.session_state.get("pick_entry")
    st.session_state["pick_entry"] = None
    _open(pick)


eid = st.query_params.get("entry")
if "guide" in st.query_params:
    show_guide()
elif eid:
    show_entry(eid.strip())
else:
    list_entries()
