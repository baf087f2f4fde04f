""""Copy as an issue": the GitHub issue body of a report, shown with a copy button and as a download (issue 18)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui.common import T


def copy_as_issue(rep: dict[str, Any], mask_identity: bool = False, key: str = "issue") -> None:
    """An expander with the ready-to-paste body (st.code has its own copy button) and a .md download."""
    from diagnostics.sessions import render_github_issue

    with st.expander(T("ui.issue.title"), icon=":material/bug_report:"):
        try:
            body = render_github_issue(rep, mask_identity=mask_identity)
        except Exception as exc:  # the report stays usable whatever happens here
            st.error(T("ui.issue.failed", error=f"{type(exc).__name__}: {exc}"))
            return
        st.caption(T("ui.issue.help", chars=f"{len(body):,}"))
        st.code(body, language="markdown", wrap_lines=True, height=320)
        stamp = str(rep.get("session_id") or "report")[:8]
        st.download_button(T("ui.issue.download"), data=lambda: body, file_name=f"gpu-doctor-issue-{stamp}.md",
                           mime="text/markdown", icon=":material/download:", on_click="ignore", key=f"{key}_dl")
