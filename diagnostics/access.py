"""Who may use the web app, and who may act as a reviewer.

Three modes, from the environment of the server:

* **local** (default): no login; meant for ``127.0.0.1``; the one user is also the reviewer.
* **secret** (small teams): ``GPU_DOCTOR_SECRET`` lets a teammate in; ``GPU_DOCTOR_REVIEWER_SECRET`` also grants
  the reviewer role (status, notes, deletion). Compared in constant time; never stored in a session.
* **oidc**: Streamlit's own OpenID Connect login (``[auth]`` in ``.streamlit/secrets.toml``); reviewers are the
  e-mail addresses in ``GPU_DOCTOR_REVIEWERS`` (comma separated).

Serving beyond this machine (an address other than loopback) is refused unless a login is configured.  A
configuration that asks for a login it cannot give is refused everywhere (``config_problem``): OIDC named but
not configured, or a shared secret shorter than MIN_SECRET_LEN characters.  Wrong passwords are slowed down
(``Throttle``): after FREE_TRIES failures within WINDOW_S, each further try waits twice as long as the last,
up to MAX_DELAY_S, per client address (all clients together when the address is unknown).
"""
from __future__ import annotations

import hmac
import os
import threading
import time
from dataclasses import dataclass
from typing import Mapping

LOOPBACK = ("127.0.0.1", "localhost", "::1")
ROLES = ("user", "reviewer")
MIN_SECRET_LEN = 16


@dataclass(frozen=True)
class AccessConfig:
    mode: str                       # local | secret | oidc
    secret: str | None = None
    reviewer_secret: str | None = None
    reviewers: frozenset[str] = frozenset()
    oidc_configured: bool = False

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
    return AccessConfig(mode, secret, rsecret, reviewers, oidc_configured)


def config_problem(cfg: AccessConfig) -> str | None:
    """Why this login configuration cannot protect anything (serving is refused, the app lets no one in)."""
    if cfg.mode == "oidc" and not cfg.oidc_configured:
        return ("GPU_DOCTOR_AUTH=oidc, but Streamlit's OIDC login is not configured ([auth] in "
                ".streamlit/secrets.toml); see docs/SECURITY.md")
    if cfg.mode == "secret" and not (cfg.secret or cfg.reviewer_secret):
        return "GPU_DOCTOR_AUTH=secret needs GPU_DOCTOR_SECRET or GPU_DOCTOR_REVIEWER_SECRET"
    for name, value in (("GPU_DOCTOR_SECRET", cfg.secret), ("GPU_DOCTOR_REVIEWER_SECRET", cfg.reviewer_secret)):
        if cfg.mode == "secret" and value is not None and len(value) < MIN_SECRET_LEN:
            return f"{name} has {len(value)} characters; use at least {MIN_SECRET_LEN}"
    return None


FREE_TRIES = 5
WINDOW_S = 900.0
MAX_DELAY_S = 60.0


class Throttle:
    """Slows down password guessing: ``wait(key)`` is how many seconds *key* must still wait before its next
    try (0 when it may try now); ``failed(key)`` records a wrong password, ``succeeded(key)`` clears the key."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._fails: dict[str, list[float]] = {}
        self._until: dict[str, float] = {}

    def wait(self, key: str) -> float:
        with self._lock:
            return max(0.0, self._until.get(key, 0.0) - self._clock())

    def failed(self, key: str) -> float:
        """Record a failure; return the delay now imposed on *key*."""
        now = self._clock()
        with self._lock:
            recent = [t for t in self._fails.get(key, []) if now - t < WINDOW_S] + [now]
            if key not in self._fails and len(self._fails) >= 10_000:  # bounded: forget the stalest address
                stale = min(self._fails, key=lambda k: self._fails[k][-1])
                self._fails.pop(stale, None)
                self._until.pop(stale, None)
            self._fails[key] = recent[-100:]
            over = len(recent) - FREE_TRIES
            delay = 0.0 if over <= 0 else min(MAX_DELAY_S, 2.0 ** (over - 1))
            if delay:
                self._until[key] = now + delay
            return delay

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._fails.pop(key, None)
            self._until.pop(key, None)


THROTTLE = Throttle()  # one per server process: every visitor's session shares it


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
    problem = config_problem(cfg)
    if problem:
        return problem
    if address in LOOPBACK:
        return None
    if cfg.mode == "local":
        return (f"refusing to serve on {address} without a login: set GPU_DOCTOR_SECRET (and "
                "GPU_DOCTOR_REVIEWER_SECRET for reviewers), or configure Streamlit's OIDC login; see docs/SECURITY.md")
    return None
