"""Who may use the web app, and who may act as a reviewer.

Three modes, from the environment of the server:

* **local** (default): no login; meant for ``127.0.0.1``; the one user is also the reviewer.
* **secret** (small teams): ``GPU_DOCTOR_SECRET`` lets a teammate in; ``GPU_DOCTOR_REVIEWER_SECRET`` also grants
  the reviewer role (status, notes, deletion). Compared in constant time; never stored in a session.
* **oidc**: Streamlit's own OpenID Connect login (``[auth]`` in ``.streamlit/secrets.toml``); reviewers are the
  e-mail addresses in ``GPU_DOCTOR_REVIEWERS`` (comma separated).

Serving beyond this machine (an address other than loopback) is refused unless a login is configured.
"""
from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from typing import Mapping

LOOPBACK = ("127.0.0.1", "localhost", "::1")
ROLES = ("user", "reviewer")


@dataclass(frozen=True)
class AccessConfig:
    mode: str                       # local | secret | oidc
    secret: str | None = None
    reviewer_secret: str | None = None
    reviewers: frozenset[str] = frozenset()

    @property
    def login_required(self) -> bool:
        return self.mode != "local"


def load_config(env: Mapping[str, str] | None = None, oidc_configured: bool = False) -> AccessConfig:
    env = os.environ if env is None else env
    secret = env.get("GPU_DOCTOR_SECRET") or None
    rsecret = env.get("GPU_DOCTOR_REVIEWER_SECRET") or None
    reviewers = frozenset(e.strip().lower() for e in (env.get("GPU_DOCTOR_REVIEWERS") or "").split(",") if e.strip())
    mode = (env.get("GPU_DOCTOR_AUTH") or "").strip().lower()
    if mode not in ("local", "secret", "oidc"):
        mode = "oidc" if oidc_configured else ("secret" if (secret or rsecret) else "local")
    return AccessConfig(mode, secret, rsecret, reviewers)


def check_secret(cfg: AccessConfig, given: str) -> str | None:
    """The role a typed secret grants, or None.  The reviewer secret grants both roles."""
    given_b = given.encode("utf-8")
    if cfg.reviewer_secret and hmac.compare_digest(given_b, cfg.reviewer_secret.encode("utf-8")):
        return "reviewer"
    if cfg.secret and hmac.compare_digest(given_b, cfg.secret.encode("utf-8")):
        return "user"
    return None


def role_for_email(cfg: AccessConfig, email: str | None) -> str:
    return "reviewer" if email and email.strip().lower() in cfg.reviewers else "user"


def serve_problem(address: str, cfg: AccessConfig) -> str | None:
    """Why serving on *address* must be refused, or None."""
    if address in LOOPBACK:
        return None
    if cfg.mode == "local":
        return (f"refusing to serve on {address} without a login: set GPU_DOCTOR_SECRET (and "
                "GPU_DOCTOR_REVIEWER_SECRET for reviewers), or configure Streamlit's OIDC login; see docs/SECURITY.md")
    if cfg.mode == "secret" and not (cfg.secret or cfg.reviewer_secret):
        return "GPU_DOCTOR_AUTH=secret needs GPU_DOCTOR_SECRET or GPU_DOCTOR_REVIEWER_SECRET"
    return None
