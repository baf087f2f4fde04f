"""GPU doctor web UI: only the table of contents.  Pages live in ui/ and call the diagnostics library."""
import streamlit as st

st.set_page_config(page_title="GPU doctor", page_icon=":material/stethoscope:", layout="wide")

from ui.auth import gate  # noqa: E402

gate()  # a team deployment asks for a login first (docs/SECURITY.md); local use goes straight in

diagnose = st.Page("ui/diagnose.py", title="Diagnose", icon=":material/stethoscope:", default=True)
sessions = st.Page("ui/sessions.py", title="Sessions", icon=":material/folder_open:", url_path="sessions")
kb = st.Page("ui/kb.py", title="Knowledge base", icon=":material/menu_book:", url_path="knowledge-base")
editor = st.Page("ui/kb_editor.py", title="Write a KB entry", icon=":material/edit_note:", url_path="kb-editor")

page = st.navigation({"Diagnose": [diagnose, sessions], "Contribute": [kb, editor]})
# a share link may point at the start page (…/?session=<id>): show that session
if page is diagnose and st.query_params.get("session"):
    st.switch_page(sessions, query_params={"session": st.query_params["session"]})
page.run()
# after the first page went out: load the knowledge base and the store in the background for the other pages
from ui.common import warm_up  # noqa: E402

warm_up()
