"""GPU doctor web UI: only the table of contents.  Pages live in ui/ and call the diagnostics library."""
import streamlit as st

st.set_page_config(page_title="GPU doctor", page_icon="🩺", layout="wide")

diagnose = st.Page("ui/diagnose.py", title="Diagnose", icon="🩺", default=True)
sessions = st.Page("ui/sessions.py", title="Sessions", icon="🗂️", url_path="sessions")
kb = st.Page("ui/kb.py", title="Knowledge base", icon="📚", url_path="knowledge-base")
editor = st.Page("ui/kb_editor.py", title="Write a KB entry", icon="✍️", url_path="kb-editor")

page = st.navigation({"Diagnose": [diagnose, sessions], "Contribute": [kb, editor]})
# a share link may point at the start page (…/?session=<id>): show that session
if page is diagnose and st.query_params.get("session"):
    st.switch_page(sessions, query_params={"session": st.query_params["session"]})
page.run()
