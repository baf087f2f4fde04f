"""Finding sessions: the list page's query (words, host, GPU, verdict, status, dates), newest first, with its total.

PostgreSQL matches words with LIKE over the pg_trgm-indexed search text; SQLite uses its FTS5 trigram table for
rare words and LIKE for common ones (see ``contains``). The ``Store`` API delegates here; the fleet view
(``stats``) reuses ``contains``."""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy import text as sql_text

from .base import StoreError, _as_dt, _fts_phrase, _like_escape
from .models import STATUSES, SessionRow

S = SessionRow.__table__


def list_columns() -> list[Any]:
    return [S.c.id, S.c.created_at, S.c.host, S.c.source, S.c.status, S.c.verdict, S.c.top_diagnosis_id,
            S.c.top_severity, S.c.diagnosis_count, S.c.gpu_names, S.c.torch_version, S.c.kb_version,
            S.c.tool_version, S.c.imported, S.c.updated_at]


def row_dict(row: Any) -> dict[str, Any]:
    d = dict(row._mapping)
    d["created_at"] = d["created_at"].isoformat() + "Z" if d["created_at"] else None
    d["updated_at"] = d["updated_at"].isoformat() + "Z" if d.get("updated_at") else None
    d["gpu_names"] = [g for g in (d["gpu_names"] or "").split("|") if g]
    d["imported"] = bool(d["imported"])
    return d


def list_sessions(store: Any, query: str = "", host: str | None = None, gpu: str | None = None,
              verdict: str | None = None, status: str | None = None, since: Any = None, until: Any = None,
              page: int = 1, page_size: int = 50) -> tuple[list[dict[str, Any]], int]:
    """One page of sessions, newest first, and the total that match.

    query: words that must all occur in the session's summary (host, GPU names and gfx targets, torch and
    ROCm versions, OS, diagnosis ids and titles, verdict, log names), case-insensitive; a word that looks
    like a session id prefix also matches the id.  host: exact host name.  gpu: substring of a GPU name.
    since/until: ISO dates or times (a bare date for until means the end of that day)."""
    page = max(1, int(page))
    page_size = max(1, min(int(page_size), 1000))
    # no stored text holds a NUL (redaction and JSON keep it out), so a search for one matches nothing;
    # answering here also keeps it away from PostgreSQL, which refuses NUL in a query parameter
    if any(isinstance(x, str) and "\x00" in x for x in (query, host, gpu, verdict, status)):
        return [], 0
    words = (query or "").lower().split()
    g = (gpu or "").lower().strip()
    if status and status not in STATUSES:
        raise StoreError(f"status must be one of {', '.join(STATUSES)}")
    lo, hi = _as_dt(since), _as_dt(until, end=True)
    with store._read() as conn:
        counts: dict[str, int] = {}
        conds: list[Any] = []
        fts_exprs: list[str] = []  # when every condition is a text match, the FTS table counts by itself
        scan = False  # a common word is matched by LIKE: counting will read every row anyway
        only_fts = not (host or verdict or status or lo or hi)
        for word in words:
            c, common, expr = contains(store, conn, word, counts)
            scan = scan or common
            if re.fullmatch(r"[0-9a-f\-]{4,36}", word):
                c = or_(c, S.c.id.like(f"{_like_escape(word)}%", escape="\\"))
                expr = None
            conds.append(c)
            fts_exprs.append(expr or "")
        if g:
            c, common, expr = contains(store, conn, g, counts, column="gpus")
            scan = scan or common
            conds.append(c)
            fts_exprs.append(expr or "")
        if host:
            conds.append(S.c.host == host)
        if lo is not None:
            conds.append(S.c.created_at >= lo)
        if hi is not None:
            conds.append(S.c.created_at <= hi if isinstance(until, datetime) else S.c.created_at < hi)
        low: list[tuple[Any, str]] = [(S.c.verdict, verdict)] if verdict else []
        low += [(S.c.status, status)] if status else []
        q = select(*list_columns()).where(*conds, *[col == v for col, v in low]) \
            .order_by(S.c.created_at.desc(), S.c.id.desc()).limit(page_size).offset((page - 1) * page_size)
        rows = conn.execute(q).all()
        total = None
        if store.dialect == "sqlite" and fts_exprs and only_fts and all(fts_exprs):
            # the FTS table has exactly one row per session (triggers keep it so): it can count by itself
            expr = " AND ".join(fts_exprs)
            total = counts.get(expr)
            if total is None:
                total = fts_count(conn, expr)
        if total is None:
            # verdict and status split the table into a few big groups: when every row is read anyway (a
            # common word), reading rows in order beats jumping through those indexes (`col || ''` hides
            # the column from SQLite's planner)
            lowc = [(col.concat("") if scan and store.dialect == "sqlite" else col) == v for col, v in low]
            total = conn.execute(select(func.count()).select_from(S).where(*conds, *lowc)).scalar_one()
    return [row_dict(r) for r in rows], int(total)


def fts_count(conn: Any, expr: str) -> int:
    return int(conn.execute(sql_text("SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH :q"),
                            {"q": expr}).scalar_one())


def contains(store: Any, conn: Any, word: str, counts: dict[str, int],
             column: str = "search_text") -> tuple[Any, bool, str | None]:
    """Condition "the session's search text (column="search_text") or GPU names (column="gpus") contain
    *word*", case-insensitive; whether the word is common; the FTS5 expression for it (SQLite, 3+ chars).

    PostgreSQL: LIKE, served by the pg_trgm index. SQLite: a word that few sessions contain is looked up in
    the FTS5 trigram table; a common word uses LIKE, because the newest-first scan then finds a page of
    matches after a few rows, and counting reads the narrow rows in order faster than it could fetch
    thousands of matches one by one."""
    target = S.c.search_text if column == "search_text" else func.lower(S.c.gpu_names)
    like = target.like(f"%{_like_escape(word)}%", escape="\\")
    if store.dialect != "sqlite":
        return like, False, None
    if len(word) < 3:  # shorter than a trigram: the index cannot help
        return like, True, None
    expr = f"{column} : {_fts_phrase(word)}"
    if expr not in counts:
        counts[expr] = fts_count(conn, expr)
    if counts[expr] > store.fts_common_limit:
        return like, True, expr
    store._nparam += 1
    name = f"fts_{store._nparam}"
    sub = sql_text(f"SELECT session_id FROM sessions_fts WHERE sessions_fts MATCH :{name}").bindparams(
        **{name: expr}).columns(session_id=S.c.id.type)
    return S.c.id.in_(sub), False, expr
