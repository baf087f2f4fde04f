"""What the store's modules share: its errors and the helpers that turn filters into SQL values."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from .summary import parse_time


class StoreError(RuntimeError):
    """The store cannot do what was asked (database newer than this code, bad argument, ...)."""


class SessionNotFound(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; this reads better in a CLI
        return f"no session with id {self.args[0]!r}"



def _as_dt(v: Any, end: bool = False) -> datetime | None:
    if v is None or v == "":
        return None
    if isinstance(v, datetime):
        return parse_time(v)
    if isinstance(v, date):
        d = datetime(v.year, v.month, v.day)
        return d + timedelta(days=1) if end else d
    if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v.strip()):
        d = datetime.fromisoformat(v.strip())
        return d + timedelta(days=1) if end else d
    dt = parse_time(v)
    if dt is None:
        raise StoreError(f"not a date or ISO-8601 time: {v!r}")
    return dt


def _fts_phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
