"""The session store: every diagnosis kept, searchable, shareable and re-diagnosable.

    store = Store()                       # --db URL / DATABASE_URL / SQLite in the user data dir
    sid = store.save(report)              # redacts secrets first; one transaction
    report = store.get(sid)               # the stored (redacted) report, byte-identical JSON
    rows, total = store.list_sessions(query="gfx1100", verdict="problems", page=1)
    data = store.export_bundle(sid)       # bytes of a checksummed JSON bundle
    other.import_bundle(data)             # refuses damaged / altered / future / oversized bundles

SQLite runs in WAL mode with a busy timeout, and every write takes the write lock up front
(``BEGIN IMMEDIATE``), so several processes (UI users, `run --save` in parallel) can share one file.
PostgreSQL is used through ``postgresql+psycopg://`` (``postgresql://`` is accepted and mapped to it).
The schema is managed by Alembic migrations (diagnostics/store/migrations) that run, under a lock, when
a Store opens a database older than this code.
"""
from __future__ import annotations

import json
import os
import re
import time
import uuid
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from sqlalchemy import Engine, create_engine, delete, event, func, insert, or_, select, update
from sqlalchemy import text as sql_text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import StaticPool

from ..redact import preview_report, redact_report, redact_text
from .bundle import (BundleError, build_bundle, iter_html, iter_markdown, parse_bundle, render_html, render_markdown,
                     validate_report, write_bundle)
from .models import (STATUSES, DiagnosisRow, FactRow, GenerationRow, NoteRow, ProbeResultRow, ReportRow,
                     SessionRow, metadata)
from . import stats as fleet
from .base import SessionNotFound, StoreError, _as_dt, _fts_phrase, _like_escape
from .summary import dumps, parse_time, sha256_of, summarise, utcnow

__all__ = ["metadata", "Store", "StoreError", "BundleError", "SessionNotFound", "default_url", "migrate", "render_markdown",
           "render_html", "STATUSES"]

T = TypeVar("T")
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x6770_7564  # "gpud": advisory lock id for migrations
S = SessionRow.__table__
P = ProbeResultRow.__table__
F = FactRow.__table__
D = DiagnosisRow.__table__
G = GenerationRow.__table__
N = NoteRow.__table__
R = ReportRow.__table__
MAX_NOTE_CHARS = 100_000


def default_url() -> str:
    """DATABASE_URL, else a SQLite file in the user data directory."""
    env = os.environ.get("DATABASE_URL", "").strip()
    if env:
        return env
    from platformdirs import user_data_dir

    d = Path(user_data_dir("gpu-doctor"))
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{d / 'sessions.db'}"


def normalise_url(url: str) -> str:
    url = url.strip()
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    if "://" not in url:  # a plain file path
        p = Path(url).expanduser()
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{p}"
    return url


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        memory = url in ("sqlite://", "sqlite:///:memory:")
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False},
                               poolclass=StaticPool if memory else None)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _rec: Any) -> None:  # pragma: no branch
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=30000")
            if not memory:
                for _ in range(100):  # switching to WAL needs a moment of exclusive access
                    try:
                        cur.execute("PRAGMA journal_mode=WAL")
                        break
                    except Exception:  # sqlite3.OperationalError: database is locked
                        time.sleep(0.05)
            cur.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: safe against process crashes
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def _alembic_config(conn: Any) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to *revision* under a lock (several processes may open a new database at once).

    Raises StoreError when the database was made by a newer gpu-doctor (a revision this code lacks)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    target = head_revision() if revision == "head" else revision
    known = {s.revision for s in ScriptDirectory.from_config(_alembic_config(None)).walk_revisions()}

    def _check(cur: str | None) -> None:
        if cur is not None and cur not in known:
            raise StoreError(f"the database schema is at revision {cur!r}, made by a newer gpu-doctor than this one "
                             f"(which knows up to {head_revision()!r}); upgrade gpu-doctor to open it")

    cur = current_revision(engine)
    _check(cur)
    if cur == target:
        return cur
    if engine.dialect.name == "sqlite":
        import sqlite3

        if sqlite3.sqlite_version_info < (3, 35, 0):
            raise StoreError(f"SQLite {sqlite3.sqlite_version} is too old for the session store (3.35 or newer is "
                             "needed); use a newer Python build, or PostgreSQL through DATABASE_URL")
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.execution_options(sqlite_begin="IMMEDIATE")
        with conn.begin():
            if engine.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})")
            cur = MigrationContext.configure(conn).get_current_revision()  # re-check under the lock
            _check(cur)
            if cur != target:
                command.upgrade(_alembic_config(conn), target)
    return current_revision(engine)


def _valid_uuid4(value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return uuid.UUID(value).version == 4 and str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def _num(v: Any, kind: type) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if kind is int:
        return int(v) if isinstance(v, int) or float(v).is_integer() else None
    return float(v)


class Store:
    """Sessions in SQLite or PostgreSQL. Thread-safe for use from one process; safe across processes."""

    def __init__(self, url: str | None = None, *, migrate_schema: bool = True) -> None:
        self.url = normalise_url(url or default_url())
        self.engine = make_engine(self.url)
        self.dialect = self.engine.dialect.name
        self._nparam = 0
        self.fts_common_limit = 2000  # SQLite: above this many matches a word is searched by LIKE (see _contains)
        if migrate_schema:
            migrate(self.engine)

    def display_url(self) -> str:
        """The database URL without its password, for messages."""
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ transactions
    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self.engine.connect() as conn:
            with conn.begin():
                yield conn

    def _write(self, fn: Callable[[Any], T]) -> T:
        """Run fn(conn) in one write transaction (SQLite: BEGIN IMMEDIATE), retrying if the file stays locked."""
        delay = 0.05
        for attempt in range(20):
            try:
                with self.engine.connect() as conn:
                    if self.dialect == "sqlite":
                        conn.execution_options(sqlite_begin="IMMEDIATE")
                    with conn.begin():
                        return fn(conn)
            except OperationalError as e:  # busy_timeout already waited 30 s; rare, but do not lose the write
                if self.dialect != "sqlite" or "locked" not in str(e).lower() or attempt == 19:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------------------------------ save / get
    def save(self, report: dict[str, Any], *, mask_identity: bool = False, imported: bool = False) -> str:
        """Store *report* (secrets always redacted first) in one transaction and return its session id.

        The report's own ``session_id`` is kept when it is a UUID4 not yet in the database; otherwise a new
        random UUID4 is given. A killed save leaves nothing behind (the transaction never commits)."""
        validate_report(report, where="report")
        red = _redact_noting(report, mask_identity)
        if not red.get("created_at"):
            red["created_at"] = utcnow().isoformat(timespec="seconds") + "Z"
        want = red.get("session_id")

        def tx(conn: Any) -> str:
            sid = want if _valid_uuid4(want) else None
            if sid is not None and conn.execute(select(S.c.id).where(S.c.id == sid)).first() is not None:
                sid = None
            if sid is None:
                sid = str(uuid.uuid4())
            red["session_id"] = sid
            self._insert(conn, sid, red, imported=imported)
            return sid

        return self._write(tx)

    def _insert(self, conn: Any, sid: str, rep: dict[str, Any], *, imported: bool) -> None:
        text = dumps(rep)
        now = utcnow()
        created = parse_time(rep.get("created_at")) or now
        conn.execute(insert(S).values(
            id=sid, created_at=created, host=str(rep.get("host") or "")[:255],
            source=str(rep.get("source") or "live")[:16], tool_version=str(rep.get("tool_version") or "")[:64],
            kb_version=str(rep.get("kb_version") or "")[:64], report_sha256=sha256_of(rep),
            saved_at=now, updated_at=now, status="new", imported=imported, **summarise(rep)))
        conn.execute(insert(R).values(session_id=sid, report_json=text))
        self._insert_children(conn, sid, rep)
        fleet.write(conn, sid, created, rep.get("host") or "", rep)

    def _insert_children(self, conn: Any, sid: str, rep: dict[str, Any]) -> None:
        probes = [p for p in rep.get("probes") or [] if isinstance(p, dict)]
        if probes:
            conn.execute(insert(P), [{
                "session_id": sid, "position": i, "probe_id": str(p.get("id"))[:128], "title": str(p.get("title") or ""),
                "status": str(p.get("status") or "")[:16], "duration_s": _num(p.get("duration_s"), float),
                "error": None if p.get("error") is None else str(p.get("error")),
                "output_tail": str(p.get("output_tail") or ""), "evidence_json": dumps(p.get("evidence") or []),
                "facts_json": dumps(p.get("facts") or {})} for i, p in enumerate(probes)])
        facts = rep.get("facts") if isinstance(rep.get("facts"), dict) else {}
        if facts:
            conn.execute(insert(F), [{"session_id": sid, "name": k, "value_json": dumps(v)} for k, v in facts.items()])
        diags = [d for d in rep.get("diagnoses") or [] if isinstance(d, dict)]
        if diags:
            conn.execute(insert(D), [{
                "session_id": sid, "position": i, "diagnosis_id": str(d.get("id"))[:128],
                "title": str(d.get("title") or ""), "severity": str(d.get("severity") or "")[:16],
                "confidence": _num(d.get("confidence"), float), "evidence_json": dumps(d.get("evidence") or []),
                "fix": str(d.get("fix") or "")} for i, d in enumerate(diags)])
        gen = rep.get("generation")
        if isinstance(gen, dict):
            conn.execute(insert(G).values(
                session_id=sid, device=(str(gen["device"])[:16] if gen.get("device") is not None else None),
                model=(str(gen["model"]) if gen.get("model") is not None else None),
                new_tokens=_num(gen.get("new_tokens"), int), tokens_per_s=_num(gen.get("tokens_per_s"), float),
                load_s=_num(gen.get("load_s"), float), ttft_s=_num(gen.get("ttft_s"), float),
                peak_rss_bytes=_num(gen.get("peak_rss_bytes"), int), peak_gpu_bytes=_num(gen.get("peak_gpu_bytes"), int),
                result_json=dumps(gen)))

    def get_json(self, sid: str) -> str:
        """The stored report JSON text, exactly as saved."""
        with self._read() as conn:
            row = conn.execute(select(R.c.report_json).where(R.c.session_id == sid)).first()
        if row is None:
            raise SessionNotFound(sid)
        return row[0]

    def get(self, sid: str) -> dict[str, Any]:
        """The stored (redacted) report of session *sid*."""
        return json.loads(self.get_json(sid))

    def exists(self, sid: str) -> bool:
        with self._read() as conn:
            return conn.execute(select(S.c.id).where(S.c.id == sid)).first() is not None

    def info(self, sid: str) -> dict[str, Any]:
        """The review data of a session: status, verdict, summary columns, note count."""
        with self._read() as conn:
            row = conn.execute(select(*self._list_columns()).where(S.c.id == sid)).first()
            if row is None:
                raise SessionNotFound(sid)
            n = conn.execute(select(func.count()).select_from(N).where(N.c.session_id == sid)).scalar_one()
        d = self._row_dict(row)
        d["note_count"] = n
        return d

    # ------------------------------------------------------------------------------------------ listing
    @staticmethod
    def _list_columns() -> list[Any]:
        return [S.c.id, S.c.created_at, S.c.host, S.c.source, S.c.status, S.c.verdict, S.c.top_diagnosis_id,
                S.c.top_severity, S.c.diagnosis_count, S.c.gpu_names, S.c.torch_version, S.c.kb_version,
                S.c.tool_version, S.c.imported, S.c.updated_at]

    @staticmethod
    def _row_dict(row: Any) -> dict[str, Any]:
        d = dict(row._mapping)
        d["created_at"] = d["created_at"].isoformat() + "Z" if d["created_at"] else None
        d["updated_at"] = d["updated_at"].isoformat() + "Z" if d.get("updated_at") else None
        d["gpu_names"] = [g for g in (d["gpu_names"] or "").split("|") if g]
        d["imported"] = bool(d["imported"])
        return d

    def list_sessions(self, query: str = "", host: str | None = None, gpu: str | None = None,
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
        with self._read() as conn:
            counts: dict[str, int] = {}
            conds: list[Any] = []
            fts_exprs: list[str] = []  # when every condition is a text match, the FTS table counts by itself
            scan = False  # a common word is matched by LIKE: counting will read every row anyway
            only_fts = not (host or verdict or status or lo or hi)
            for word in words:
                c, common, expr = self._contains(conn, word, counts)
                scan = scan or common
                if re.fullmatch(r"[0-9a-f\-]{4,36}", word):
                    c = or_(c, S.c.id.like(f"{_like_escape(word)}%", escape="\\"))
                    expr = None
                conds.append(c)
                fts_exprs.append(expr or "")
            if g:
                c, common, expr = self._contains(conn, g, counts, column="gpus")
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
            q = select(*self._list_columns()).where(*conds, *[col == v for col, v in low]) \
                .order_by(S.c.created_at.desc(), S.c.id.desc()).limit(page_size).offset((page - 1) * page_size)
            rows = conn.execute(q).all()
            total = None
            if self.dialect == "sqlite" and fts_exprs and only_fts and all(fts_exprs):
                # the FTS table has exactly one row per session (triggers keep it so): it can count by itself
                expr = " AND ".join(fts_exprs)
                total = counts.get(expr)
                if total is None:
                    total = self._fts_count(conn, expr)
            if total is None:
                # verdict and status split the table into a few big groups: when every row is read anyway (a
                # common word), reading rows in order beats jumping through those indexes (`col || ''` hides
                # the column from SQLite's planner)
                lowc = [(col.concat("") if scan and self.dialect == "sqlite" else col) == v for col, v in low]
                total = conn.execute(select(func.count()).select_from(S).where(*conds, *lowc)).scalar_one()
        return [self._row_dict(r) for r in rows], int(total)

    def _fts_count(self, conn: Any, expr: str) -> int:
        return int(conn.execute(sql_text("SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH :q"),
                                {"q": expr}).scalar_one())

    def _contains(self, conn: Any, word: str, counts: dict[str, int],
                  column: str = "search_text") -> tuple[Any, bool, str | None]:
        """Condition "the session's search text (column="search_text") or GPU names (column="gpus") contain
        *word*", case-insensitive; whether the word is common; the FTS5 expression for it (SQLite, 3+ chars).

        PostgreSQL: LIKE, served by the pg_trgm index. SQLite: a word that few sessions contain is looked up in
        the FTS5 trigram table; a common word uses LIKE, because the newest-first scan then finds a page of
        matches after a few rows, and counting reads the narrow rows in order faster than it could fetch
        thousands of matches one by one."""
        target = S.c.search_text if column == "search_text" else func.lower(S.c.gpu_names)
        like = target.like(f"%{_like_escape(word)}%", escape="\\")
        if self.dialect != "sqlite":
            return like, False, None
        if len(word) < 3:  # shorter than a trigram: the index cannot help
            return like, True, None
        expr = f"{column} : {_fts_phrase(word)}"
        if expr not in counts:
            counts[expr] = self._fts_count(conn, expr)
        if counts[expr] > self.fts_common_limit:
            return like, True, expr
        self._nparam += 1
        name = f"fts_{self._nparam}"
        sub = sql_text(f"SELECT session_id FROM sessions_fts WHERE sessions_fts MATCH :{name}").bindparams(
            **{name: expr}).columns(session_id=S.c.id.type)
        return S.c.id.in_(sub), False, expr

    def count(self) -> int:
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(S)).scalar_one())

    def ids(self) -> list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute(select(S.c.id).order_by(S.c.created_at, S.c.id))]

    # ------------------------------------------------------------------------------------------ review
    def set_status(self, sid: str, status: str) -> None:
        if status not in STATUSES:
            raise StoreError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")

        def tx(conn: Any) -> None:
            r = conn.execute(update(S).where(S.c.id == sid).values(status=status, updated_at=utcnow()))
            if r.rowcount == 0:
                raise SessionNotFound(sid)
            conn.execute(update(fleet.FA).where(fleet.FA.c.session_id == sid).values(status=status))

        self._write(tx)

    def add_note(self, sid: str, author: str, text: str) -> int:
        """Add a reviewer note (secrets in it are redacted too); return its id."""
        author = (author or "").strip()[:128] or "anonymous"
        if not isinstance(text, str) or not text.strip():
            raise StoreError("a note needs some text")
        if len(text) > MAX_NOTE_CHARS:
            raise StoreError(f"a note is limited to {MAX_NOTE_CHARS:,} characters")
        text = redact_text(text)

        def tx(conn: Any) -> int:
            if conn.execute(select(S.c.id).where(S.c.id == sid)).first() is None:
                raise SessionNotFound(sid)
            r = conn.execute(insert(N).values(session_id=sid, author=author, text=text, created_at=utcnow()))
            conn.execute(update(S).where(S.c.id == sid).values(updated_at=utcnow()))
            return int(r.inserted_primary_key[0])

        return self._write(tx)

    def notes(self, sid: str) -> list[dict[str, Any]]:
        with self._read() as conn:
            if conn.execute(select(S.c.id).where(S.c.id == sid)).first() is None:
                raise SessionNotFound(sid)
            rows = conn.execute(select(N.c.id, N.c.author, N.c.text, N.c.created_at)
                                .where(N.c.session_id == sid).order_by(N.c.created_at, N.c.id)).all()
        return [{"id": r.id, "author": r.author, "text": r.text, "created_at": r.created_at.isoformat() + "Z"}
                for r in rows]

    def delete(self, sid: str) -> bool:
        """Delete a session and everything attached to it; False when there was none."""

        def tx(conn: Any) -> bool:
            for t in (fleet.SG, fleet.FA, N, G, D, F, P, R):
                conn.execute(delete(t).where(t.c.session_id == sid))
            return conn.execute(delete(S).where(S.c.id == sid)).rowcount > 0

        return self._write(tx)

    # ------------------------------------------------------------------------------------------ compare
    def compare(self, id_a: str, id_b: str) -> dict[str, Any]:
        """What changed from session *id_a* (before) to *id_b* (after)."""
        return compare_reports(self.get(id_a), self.get(id_b))

    # ------------------------------------------------------------------------------------------ bundles
    def export_bundle(self, sid: str, mask_identity: bool = False) -> bytes:
        """The shareable bundle of a session: secrets are redacted again, identity masked on request."""
        session = redact_report(self.get(sid), mask_identity=mask_identity)
        return build_bundle(session)

    def write_bundle(self, sid: str, fp: Any, mask_identity: bool = False) -> int:
        """:meth:`export_bundle` written to the binary file *fp* as it is made (the bundle, about three times the
        session's size, is never held in memory); returns the number of bytes written."""
        session = redact_report(self.get(sid), mask_identity=mask_identity)
        return write_bundle(session, fp)

    def share_preview(self, sid: str, mask_identity: bool = False) -> dict[str, Any]:
        """What an export would share, for the UI to show before sharing: {"report": what leaves the machine,
        "redacted_at_save": secrets removed when the session was saved (kind and place, never the value),
        "replacements": anything more removed now, "identity": host/user occurrences masked}."""
        report = self.get(sid)
        prev = preview_report(report, mask_identity=mask_identity)
        prev["redacted_at_save"] = list(report.get("redactions") or [])
        return prev

    def export_markdown(self, sid: str, mask_identity: bool = False) -> str:
        return render_markdown(redact_report(self.get(sid), mask_identity=mask_identity))

    def export_html(self, sid: str, mask_identity: bool = False) -> str:
        session = redact_report(self.get(sid), mask_identity=mask_identity)
        parts = list(iter_html(session))
        del session  # the pieces are all that is left to join (the session and the page are not held together)
        return "".join(parts)

    def write_report(self, sid: str, fp: Any, fmt: str, mask_identity: bool = False) -> int:
        """The Markdown (*fmt* "md") or HTML ("html") report written to the binary file *fp* piece by piece (what
        :meth:`export_markdown` / :meth:`export_html` return, never held whole); returns the bytes written."""
        session = redact_report(self.get(sid), mask_identity=mask_identity)
        n = 0
        for piece in (iter_markdown(session) if fmt == "md" else iter_html(session)):
            for i in range(0, len(piece), 1 << 20):
                data = piece[i:i + (1 << 20)].encode("utf-8")
                fp.write(data)
                n += len(data)
        return n

    def import_bundle(self, data: bytes) -> str:
        """Import a bundle and return the session id (see import_bundle_ex for the warnings)."""
        return self.import_bundle_ex(data)["id"]

    def import_bundle_ex(self, data: bytes) -> dict[str, Any]:
        """Import a bundle: {"id", "warnings", "existing"}. Raises BundleError (database untouched) if refused.

        The session keeps its id when that id is free; the same session imported twice is stored once
        ("existing": true); a different session carrying a taken id gets a new id (noted in warnings)."""
        session, warnings = parse_bundle(data)
        red = _redact_noting(session, False)
        want = red.get("session_id")

        def tx(conn: Any) -> dict[str, Any]:
            sid = want if _valid_uuid4(want) else None
            if sid is not None:
                row = conn.execute(select(R.c.report_json).where(R.c.session_id == sid)).first()
                if row is not None:
                    if row[0] == dumps(red):
                        return {"id": sid, "warnings": warnings, "existing": True}
                    warnings.append(f"a different session with id {sid} already exists; imported under a new id")
                    sid = None
            else:
                warnings.append("the bundle's session id is not a random UUID; imported under a new id")
            if sid is None:
                sid = str(uuid.uuid4())
                red["session_id"] = sid
            self._insert(conn, sid, red, imported=True)
            return {"id": sid, "warnings": warnings, "existing": False}

        return self._write(tx)

    # ------------------------------------------------------------------------------------------ rediagnose
    def rediagnose(self, sid: str, diagnose: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Diagnose the stored facts and logs again with *diagnose* (the service's ``rediagnose``: today's KB);
        update the session in place and add a note saying what changed. Returns {"id", "appeared",
        "disappeared", "unchanged", "changed"}. The store knows how to keep a session, not how to diagnose one:
        the front ends call ``diagnostics.service.rediagnose_session``."""
        old = self.get(sid)
        new = diagnose(json.loads(json.dumps(old)))
        if not isinstance(new, dict):
            raise StoreError("the re-diagnosis returned no report")
        new = _redact_noting(new, False)
        new["session_id"] = sid
        diff = compare_reports(old, new)

        def findings(r: dict[str, Any]) -> str:
            # the verdict's inputs too: a session saved before "unexplained" existed gets its new verdict stored
            return dumps([r.get("diagnoses"), r.get("not_ruled_out"), r.get("kb_version"), r.get("root_causes"),
                          r.get("unexplained"), r.get("verdict")])

        changed = findings(old) != findings(new)

        def tx(conn: Any) -> None:
            row = conn.execute(select(S.c.created_at, S.c.host).where(S.c.id == sid)).first()
            if row is None:
                raise SessionNotFound(sid)
            fleet.write(conn, sid, row.created_at, row.host, new if changed else old)  # today's verdict rule
            if not changed:
                return
            for t in (G, D, F, P):
                conn.execute(delete(t).where(t.c.session_id == sid))
            conn.execute(update(R).where(R.c.session_id == sid).values(report_json=dumps(new)))
            conn.execute(update(S).where(S.c.id == sid).values(
                report_sha256=sha256_of(new), updated_at=utcnow(),
                kb_version=str(new.get("kb_version") or "")[:64], **summarise(new)))
            self._insert_children(conn, sid, new)
            if diff["appeared"] or diff["disappeared"]:
                text = "Re-diagnosed with KB {}: appeared {}; disappeared {}.".format(
                    new.get("kb_version") or "(unknown version)",
                    ", ".join(d["id"] for d in diff["appeared"]) or "none",
                    ", ".join(d["id"] for d in diff["disappeared"]) or "none")
                conn.execute(insert(N).values(session_id=sid, author="gpu-doctor", text=text, created_at=utcnow()))

        self._write(tx)
        return {"id": sid, "changed": changed, "appeared": diff["appeared"], "disappeared": diff["disappeared"],
                "unchanged": diff["unchanged"]}

    def rediagnose_all(self, diagnose: Callable[[dict[str, Any]], dict[str, Any]], batch: int = 200) -> dict[str, Any]:
        """Re-diagnose every session (in id order, a batch at a time). Returns counts and per-session errors."""
        done = changed = 0
        errors: dict[str, str] = {}
        last = ""
        while True:
            with self._read() as conn:
                ids = [r[0] for r in conn.execute(select(S.c.id).where(S.c.id > last).order_by(S.c.id).limit(batch))]
            if not ids:
                break
            for sid in ids:
                try:
                    r = self.rediagnose(sid, diagnose)
                    done += 1
                    changed += bool(r["changed"])
                except SessionNotFound:
                    continue  # deleted meanwhile
                except Exception as e:  # one bad session must not stop the rest
                    errors[sid] = f"{type(e).__name__}: {e}"
            last = ids[-1]
        return {"rediagnosed": done, "changed": changed, "errors": errors}


def _redact_noting(report: dict[str, Any], mask_identity: bool) -> dict[str, Any]:
    """Redact *report* and list what was removed under "redactions" (placeholder, kind, where; never the value),
    keeping the list a report already carries, so support can see that a token was there."""
    prev = preview_report(report, mask_identity=mask_identity)
    red = prev["report"]
    if prev["replacements"]:
        seen = list(red.get("redactions") or []) if isinstance(red.get("redactions"), list) else []
        red["redactions"] = seen + [{"placeholder": r["placeholder"], "kind": r["kind"], "where": r["where"]}
                                    for r in prev["replacements"]]
    return red


def _diag_key(d: dict[str, Any]) -> str:
    return str(d.get("id"))


def compare_reports(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Findings that appeared / disappeared / stayed from report *a* to report *b*, facts that changed,
    and probes whose status changed."""
    da = {_diag_key(d): d for d in a.get("diagnoses") or [] if isinstance(d, dict)}
    db = {_diag_key(d): d for d in b.get("diagnoses") or [] if isinstance(d, dict)}

    def brief(d: dict[str, Any]) -> dict[str, Any]:
        return {"id": d.get("id"), "title": d.get("title"), "severity": d.get("severity")}

    fa = a.get("facts") if isinstance(a.get("facts"), dict) else {}
    fb = b.get("facts") if isinstance(b.get("facts"), dict) else {}
    changed_facts = []
    for name in sorted(set(fa) | set(fb)):
        if name not in fb:
            changed_facts.append({"name": name, "change": "removed", "before": fa[name], "after": None})
        elif name not in fa:
            changed_facts.append({"name": name, "change": "added", "before": None, "after": fb[name]})
        elif dumps(fa[name]) != dumps(fb[name]):
            changed_facts.append({"name": name, "change": "changed", "before": fa[name], "after": fb[name]})
    pa = {str(p.get("id")): p.get("status") for p in a.get("probes") or [] if isinstance(p, dict)}
    pb = {str(p.get("id")): p.get("status") for p in b.get("probes") or [] if isinstance(p, dict)}
    probes = [{"id": k, "before": pa.get(k), "after": pb.get(k)} for k in sorted(set(pa) | set(pb))
              if pa.get(k) != pb.get(k)]
    return {
        "a": a.get("session_id"), "b": b.get("session_id"),
        "appeared": [brief(db[k]) for k in db if k not in da],
        "disappeared": [brief(da[k]) for k in da if k not in db],
        "unchanged": [brief(db[k]) for k in db if k in da],
        "changed_facts": changed_facts,
        "changed_probes": probes,
        "verdict": {"before": _verdict(a), "after": _verdict(b)},
    }


def _verdict(r: dict[str, Any]) -> str:
    from .summary import verdict

    return verdict(r)

