"""The login gate of the web app (see diagnostics/access.py for the modes)."""
from __future__ import annotations

import streamlit as st

from diagnostics.access import check_secret, load_config, role_for_email


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets.toml at all
        return False


def gate() -> str:
    """Stop the page until the visitor is let in; return their role ('user' or 'reviewer')."""
    cfg = load_config(oidc_configured=_oidc_configured())
    if not cfg.login_required:
        st.session_state["role"] = "reviewer"
        return "reviewer"
    if cfg.mode == "oidc":
        if not st.user.is_logged_in:
            st.title("GPU doctor")
            st.write("Log in with your organisation's account to continue.")
            st.button("Log in", on_click=st.login, type="primary")
            st.stop()
        role = role_for_email(cfg, getattr(st.user, "email", None))
        st.session_state["role"] = role
        return role
    role = st.session_state.get("role")
    if role in ("user", "reviewer") and st.session_state.get("auth_mode") == cfg.mode:
        return role
    st.title("GPU doctor")
    with st.form("login"):
        given = st.text_input("Team password", type="password")
        ok = st.form_submit_button("Enter", type="primary")
    if ok:
        role = check_secret(cfg, given)
        if role:
            st.session_state["role"] = role
            st.session_state["auth_mode"] = cfg.mode
            st.rerun()
        st.error("That password is not right.")
    st.stop()
    return "user"  # not reached


def is_reviewer() -> bool:
    return st.session_state.get("role", "reviewer" if not load_config().login_required else "user") == "reviewer"
