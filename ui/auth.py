"""The login gate of the web app (see diagnostics/access.py for the modes)."""
from __future__ import annotations

import streamlit as st

from diagnostics.access import THROTTLE, check_secret, config_problem, load_config, role_for_email
from ui.common import T


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets.toml at all
        return False


def _client() -> str:
    """The visitor's address when Streamlit knows it (the throttle's key); all visitors together otherwise."""
    try:
        ip = getattr(st.context, "ip_address", None)
    except Exception:
        ip = None
    return ip if isinstance(ip, str) and ip else "*"


def gate() -> str:
    """Stop the page until the visitor is let in; return their role ('user' or 'reviewer')."""
    cfg = load_config(oidc_configured=_oidc_configured())
    problem = config_problem(cfg)
    if problem:  # a login that cannot protect anything lets no one in (and `serve` refuses to start)
        st.title(T("ui.app.title"))
        st.error(T("ui.auth.misconfigured", problem=problem))
        st.stop()
    if not cfg.login_required:
        st.session_state["role"] = "reviewer"
        return "reviewer"
    if cfg.mode == "oidc":
        if not st.user.is_logged_in:
            st.title(T("ui.app.title"))
            st.write(T("ui.auth.oidc_prompt"))
            st.button(T("ui.auth.log_in"), on_click=st.login, type="primary")
            st.stop()
        role = role_for_email(cfg, getattr(st.user, "email", None))
        st.session_state["role"] = role
        return role
    role = st.session_state.get("role")
    if role in ("user", "reviewer") and st.session_state.get("auth_mode") == cfg.mode:
        return role
    st.title(T("ui.app.title"))
    with st.form("login"):
        given = st.text_input(T("ui.auth.password"), type="password")
        ok = st.form_submit_button(T("ui.auth.enter"), type="primary")
    if ok:
        key = _client()
        wait = THROTTLE.wait(key)
        if wait > 0:  # too many wrong passwords lately: not even checked until the delay has passed
            st.error(T("ui.auth.too_many", seconds=int(wait + 0.999)))
            st.stop()
        role = check_secret(cfg, given)
        if role:
            THROTTLE.succeeded(key)
            st.session_state["role"] = role
            st.session_state["auth_mode"] = cfg.mode
            st.rerun()
        delay = THROTTLE.failed(key)
        st.error(T("ui.auth.wrong_password") + (" " + T("ui.auth.too_many", seconds=int(delay + 0.999))
                                                if delay else ""))
    st.stop()
    return "user"  # not reached


def is_reviewer() -> bool:
    return st.session_state.get("role", "reviewer" if not load_config().login_required else "user") == "reviewer"
