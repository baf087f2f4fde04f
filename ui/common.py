"""Small helpers the pages share: the session store, links, page paths, friendly errors."""
from __future__ import annotations

import os
import threading
from typing import Any

import streamlit as st

from diagnostics.i18n import LANGUAGE_NAMES, LANGUAGES, normalize_language, pick_language, t

# url paths of the pages (app.py registers them with these paths; links between pages use them)
PATH_DIAGNOSE = ""
PATH_SESSIONS = "sessions"
PATH_KB = "knowledge-base"
PATH_EDITOR = "kb-editor"
CSS = """
<style>
.gd-md p, .gd-md li {margin-bottom: .25rem}
.gd-md pre {background: #f6f8fa; padding: .5rem; border-radius: .3rem; overflow-x: auto}
.gd-ev {font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; background: #f6f8fa;
        border-radius: .3rem; padding: .4rem .6rem; margin: .1rem 0 .3rem 0; white-space: pre-wrap;
        overflow-wrap: anywhere}
.gd-ev mark {background: #ffe58a; padding: 0 .1rem; border-radius: .15rem}
.gd-ev .gd-src {color: #57606a}
.st-key-yaml textarea {font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem}
/* status words stay on one line ("已跳过") */
[data-testid="stMarkdownContainer"] td:nth-child(3) {white-space: nowrap}
/* phone (issue 18): tables become cards, figures two to a row, nothing wider than the screen */
@media (max-width: 640px) {
  [data-testid="stMarkdownContainer"] table, [data-testid="stMarkdownContainer"] tbody,
  [data-testid="stMarkdownContainer"] tr, [data-testid="stMarkdownContainer"] td {display: block; width: 100%}
  [data-testid="stMarkdownContainer"] thead {display: none}
  [data-testid="stMarkdownContainer"] tr {border: 1px solid rgba(49, 51, 63, .2); border-radius: .5rem;
                                          margin: .4rem 0; padding: .35rem .6rem}
  [data-testid="stMarkdownContainer"] td {border: none; padding: .1rem 0; white-space: normal;
                                          overflow-wrap: anywhere}
  [data-testid="stMarkdownContainer"] td:first-child {float: left; margin-right: .4rem; width: auto}
  [data-testid="stMarkdownContainer"] td:nth-child(2) {font-weight: 600}
  [data-testid="stMarkdownContainer"] td:empty {display: none}
  [data-testid="stHorizontalBlock"]:has([data-testid="stMetric"]) {flex-flow: row wrap !important; gap: .5rem}
  [data-testid="stHorizontalBlock"]:has([data-testid="stMetric"]) > [data-testid="stColumn"] {
      flex: 1 1 calc(50% - .5rem) !important; min-width: calc(50% - .5rem) !important}
  [data-testid="stMarkdownContainer"] pre, [data-testid="stCode"] pre {white-space: pre-wrap; overflow-wrap: anywhere}
  [data-testid="stAlert"] {overflow-wrap: anywhere}
}
</style>
"""


_warmed = False


# --------------------------------------------------------------------------------------------------- language
def _accept_language() -> str | None:
    """The browser's language: ``st.context.locale`` (what the browser itself reports, e.g. ``zh-CN``), else the
    request's Accept-Language header (headless Chromium may send only ``en-US`` there whatever its locale)."""
    for get in (lambda: st.context.locale, lambda: st.context.headers.get("Accept-Language")):
        try:
            value = get()
        except Exception:  # no browser request behind this run (AppTest, bare mode)
            value = None
        if value:
            return str(value)
    return None


def lang() -> str:
    """The language of this visitor: ``?lang=`` when the link names one (applied when it first appears, so the
    sidebar choice can change it afterwards), else the choice kept in ``st.session_state["lang"]``, else the
    browser's Accept-Language, else English.  The server's own locale does not decide what a browser sees."""
    qp = normalize_language(st.query_params.get("lang"))
    if qp and st.session_state.get("_lang_qp") != qp:
        st.session_state["_lang_qp"] = qp
        st.session_state["lang"] = qp
    cur = normalize_language(st.session_state.get("lang"))
    if cur is None:
        cur = pick_language(accept_language=_accept_language(), env={})
    if st.session_state.get("lang") != cur:
        st.session_state["lang"] = cur
    return cur


def T(key: str, **kwargs: Any) -> str:
    """The catalogue message *key* in the visitor's language (diagnostics/i18n/*.json)."""
    return t(key, lang(), **kwargs)


def _chosen() -> None:
    choice = st.session_state.get("lang_choice")
    if choice in LANGUAGES:
        st.session_state["lang"] = choice
        if "lang" in st.query_params:  # keep a shared link and the choice in step
            st.query_params["lang"] = choice
            st.session_state["_lang_qp"] = choice


def language_picker() -> None:
    """The language choice in the sidebar (English / 简体中文)."""
    cur = lang()
    st.session_state["lang_choice"] = cur
    st.sidebar.selectbox(t("ui.app.language", cur), list(LANGUAGES), key="lang_choice",
                         format_func=lambda code: LANGUAGE_NAMES.get(code, code), on_change=_chosen)


def warm_up() -> None:
    """Once per server process, after the first page was sent: load the knowledge base and import the store in
    a background thread, so the first visit to the other pages does not wait for them (about 2 s here)."""
    global _warmed
    if _warmed:
        return
    _warmed = True

    def work() -> None:
        try:
            from diagnostics.service import get_kb

            get_kb()
            import diagnostics.sessions  # noqa: F401  (the store: SQLAlchemy, Alembic)
        except Exception:
            pass  # the pages report their own errors when they need these

    threading.Thread(target=work, name="gpu-doctor-warm-up", daemon=True).start()


def style() -> None:
    """The few CSS rules the pages use (static text, no user input)."""
    st.markdown(CSS + uploader_css(lang()), unsafe_allow_html=True)


def uploader_css(language: str) -> str:
    """st.file_uploader's own words ("Upload", "64MB per file") in *language*.

    Streamlit has no parameter for them (streamlit/streamlit#13500), so the rules hide its English text and
    draw the catalogue's instead (``::after``); the label above the box is ours anyway.  English: nothing."""
    if language == "en":
        return ""
    try:
        mb = int(st.get_option("server.maxUploadSize"))
    except Exception:
        mb = 200
    button = t("ui.upload.button", language).replace('"', "'")
    limit = t("ui.upload.limit", language, mb=mb).replace('"', "'")
    zone = '[data-testid="stFileUploaderDropzone"]'
    return (f"<style>{zone} > span > button [data-testid=\"stMarkdownContainer\"] p {{font-size: 0}}"
            f"{zone} > span > button [data-testid=\"stMarkdownContainer\"] p::after "
            f"{{content: \"{button}\"; font-size: .875rem}}"
            f"[data-testid=\"stFileUploaderDropzoneInstructions\"] span {{font-size: 0}}"
            f"[data-testid=\"stFileUploaderDropzoneInstructions\"] span::after "
            f"{{content: \"{limit}\"; font-size: .875rem}}</style>")


def database_url() -> str:
    from diagnostics.sessions import default_url

    return default_url()


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Any:
    from diagnostics.sessions import Store

    return Store(url)


def store() -> Any:
    """The session store of this server (DATABASE_URL, else SQLite in the user data directory), or None with a
    message on screen when it cannot be opened."""
    try:
        return _store(database_url())
    except Exception as exc:  # shown in words; never a traceback
        st.error(T("ui.sessions.db_failed", error=f"{type(exc).__name__}: {exc}"))
        return None


def base_url() -> str:
    """The address of this app as the browser sees it (for share links), without a trailing slash."""
    try:
        url = st.context.url or ""
    except Exception:
        url = ""
    if not url:
        port = os.environ.get("STREAMLIT_SERVER_PORT", "8501")
        return f"http://127.0.0.1:{port}"
    url = url.split("?", 1)[0].rstrip("/")
    for p in (PATH_SESSIONS, PATH_KB, PATH_EDITOR):
        if url.endswith("/" + p):
            url = url[: -len(p) - 1]
    return url


def session_link(sid: str) -> str:
    return f"{base_url()}/{PATH_SESSIONS}?session={sid}"


def page_file(name: str) -> str:
    """Path of a page file for st.switch_page / st.page_link (relative to the main script, app.py)."""
    return f"ui/{name}.py"


def fmt_time(iso: str | None) -> str:
    if not iso:
        return ""
    s = str(iso).replace("T", " ")
    for suffix in ("+00:00", "Z"):
        if s.endswith(suffix):
            s = s[: -len(suffix)] + " UTC"
    return s[:23] if "." in s else s
