"""GPU doctor web UI: only the table of contents.  Pages live in ui/ and call the diagnostics library."""
import streamlit as st

from ui.auth import gate, is_reviewer  # noqa: E402
from ui.common import T, language_picker  # noqa: E402
from ui.media_guard import install as guard_media  # noqa: E402

st.set_page_config(page_title=T("ui.app.title"), page_icon=":material/stethoscope:", layout="wide")
guard_media()  # exported files: served once, to the click that built them, then gone (ui/media_guard.py)
language_picker()  # sidebar: English / 简体中文 (from the browser's Accept-Language, ?lang=zh, or the choice)
gate()  # a team deployment asks for a login first (docs/SECURITY.md); local use goes straight in

diagnose = st.Page("ui/diagnose.py", title=T("ui.app.nav_diagnose"), icon=":material/stethoscope:", default=True)
sessions = st.Page("ui/sessions.py", title=T("ui.app.nav_sessions"), icon=":material/folder_open:",
                   url_path="sessions")
kb = st.Page("ui/kb.py", title=T("ui.app.nav_kb"), icon=":material/menu_book:", url_path="knowledge-base")
editor = st.Page("ui/kb_editor.py", title=T("ui.app.nav_kb_editor"), icon=":material/edit_note:",
                 url_path="kb-editor")

fleet = st.Page("ui/fleet.py", title=T("ui.app.nav_fleet"), icon=":material/monitoring:", url_path="fleet")
# the fleet view is for reviewers (ui/fleet.py refuses others too)
page = st.navigation({T("ui.app.nav_diagnose"): [diagnose, sessions] + ([fleet] if is_reviewer() else []),
                      T("ui.app.nav_contribute"): [kb, editor]})
# a share link may point at the start page (…/?session=<id>): show that session
if page is diagnose and st.query_params.get("session"):
    st.switch_page(sessions, query_params={"session": st.query_params["session"]})
page.run()
# after the first page went out: load the knowledge base and the store in the background for the other pages
from ui.common import warm_up  # noqa: E402

warm_up()
