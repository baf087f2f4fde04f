"""GPU doctor web UI: only the table of contents.  Pages live in ui/ and call the diagnostics library."""
import streamlit as st

st.set_page_config(page_title="GPU doctor", page_icon="🩺", layout="wide")

pages = [
    st.Page("ui/diagnose.py", title="Diagnose", icon="🩺", default=True),
]
st.navigation(pages).run()
