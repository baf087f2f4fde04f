"""Stored sessions as the front ends see them (the service layer beside ``diagnostics.service``).

The store (``diagnostics.store``) keeps sessions; it does not diagnose. Re-diagnosing a stored session needs both,
so it is composed here: ``rediagnose_session(store, sid)`` hands the service's ``rediagnose`` to the store. The web
UI and the CLI reach the store, its fleet view, the redactor's share preview and the issue body only through this
module (tests/test_layers.py holds it).
"""
from __future__ import annotations

from typing import Any

from . import service
from .issue_body import render_github_issue
from .monitor import chart_data
from .redact import preview_report, redact_report
from .store import (STATUSES, BundleError, SessionNotFound, Store, StoreError, compare_reports, default_url,
                    render_markdown)
from .store import stats as fleet

__all__ = ["STATUSES", "BundleError", "chart_data", "SessionNotFound", "Store", "StoreError", "compare_reports", "default_url",
           "fleet", "open_store", "preview_report", "redact_report", "render_github_issue", "render_markdown",
           "rediagnose_all", "rediagnose_fleet", "rediagnose_session"]


def open_store(url: str | None = None) -> Store:
    """The session store at *url* (``--db``), else ``DATABASE_URL``, else the SQLite file in the user data dir."""
    return Store(url or default_url())


def rediagnose_session(store: Store, sid: str) -> dict[str, Any]:
    """Diagnose a stored session again with today's KB and rules; the session is updated in place."""
    return store.rediagnose(sid, service.rediagnose)


def rediagnose_all(store: Store) -> dict[str, Any]:
    """Every stored session again (counts and per-session errors)."""
    return store.rediagnose_all(service.rediagnose)


def rediagnose_fleet(store: Store) -> dict[str, Any]:
    """``rediagnose_all`` plus what it did to the unexplained queue (the fleet page's button)."""
    return fleet.rediagnose_all(store, service.rediagnose)
