"""The session store: every diagnosis kept, searchable, shareable and re-diagnosable.

    store = Store()                       # --db URL / DATABASE_URL / SQLite in the user data dir
    sid = store.save(report)              # redacts secrets first; one transaction
    report = store.get(sid)               # the stored (redacted) report, byte-identical JSON
    rows, total = store.list_sessions(query="gfx1100", verdict="problems", page=1)
    data = store.export_bundle(sid)       # bytes of a checksummed JSON bundle (the session and its checksum)
    store.write_bundle(sid, fp, reports=True)  # to a binary file: + its Markdown/HTML renderings (--with-reports)
    other.import_bundle(data)             # refuses damaged / altered / future / oversized bundles

SQLite runs in WAL mode with a busy timeout, and every write takes the write lock up front
(``BEGIN IMMEDIATE``), so several processes (UI users, `run --save` in parallel) can share one file.
PostgreSQL is used through ``postgresql+psycopg://`` (``postgresql://`` is accepted and mapped to it).
The schema is managed by Alembic migrations (diagnostics/store/migrations) that run, under a lock, when
a Store opens a database older than this code.
"""
from __future__ import annotations

import json
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from sqlalchemy import case, delete, func, insert, literal_column, select, update
from sqlalchemy.exc import OperationalError

from ..redact import preview_report, redact_report, redact_text
from .bundle import (BundleError, iter_html, iter_markdown, parse_bundle, render_html, render_markdown,
                     validate_report, write_bundle)
from .models import (STATUSES, DiagnosisRow, FactRow, GenerationRow, NoteRow, ProbeResultRow, ReportRow,
                     SessionRow, metadata)
from . import stats as fleet
from . import search
from .base import SessionNotFound, StoreError
from .engine import _alembic_config, current_revision, default_url, head_revision, make_engine, migrate, normalise_url
from .summary import dumps, json_bytes, json_size, parse_time, sha256_of, summarise, utcnow

__all__ = ["metadata", "Store", "StoreError", "BundleError", "SessionNotFound", "default_url", "migrate", "make_engine",
           "normalise_url", "current_revision", "head_revision", "_alembic_config", "render_markdown", "render_html",
           "STATUSES"]

T = TypeVar("T")
S = SessionRow.__table__
P = ProbeResultRow.__table__
F = FactRow.__table__
D = DiagnosisRow.__table__
G = GenerationRow.__table__
N = NoteRow.__table__
R = ReportRow.__table__
MAX_NOTE_CHARS = 100_000
BLOB_MIN = 1 << 20  # SQLite: a report JSON of this many bytes or more is written through a blob handle (_put_report)
PG_PIECES = 16  # PostgreSQL: a long report JSON is read in at most this many slices (_get_json_pg)


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

    def _insert(self, conn: Any, sid: str, rep: dict[str, Any], *, imported: bool, digest: str | None = None) -> None:
        """Insert session *sid* (*digest*: :func:`sha256_of` of *rep* when the caller has it already)."""
        now = utcnow()
        created = parse_time(rep.get("created_at")) or now
        conn.execute(insert(S).values(
            id=sid, created_at=created, host=str(rep.get("host") or "")[:255],
            source=str(rep.get("source") or "live")[:16], tool_version=str(rep.get("tool_version") or "")[:64],
            kb_version=str(rep.get("kb_version") or "")[:64], report_sha256=digest or sha256_of(rep),
            saved_at=now, updated_at=now, status="new", imported=imported, **summarise(rep)))
        self._put_report(conn, sid, rep)
        self._insert_children(conn, sid, rep)
        fleet.write(conn, sid, created, rep.get("host") or "", rep)

    def _put_report(self, conn: Any, sid: str, rep: dict[str, Any], *, replace: bool = False) -> None:
        """Store :func:`dumps` of *rep* as the report row of *sid* (a new row, or in place of its row: *replace*).

        A bound text parameter costs SQLite two copies of it (Python's sqlite3 binds a copy, and the record built
        for the row is another), on top of the JSON text itself: three copies of a 64 MB log.  So on SQLite a long
        report is stored as a zero-filled value of its exact size (``zeroblob``, which SQLite never materialises)
        and its JSON is written into it through a blob handle, a piece at a time: the JSON is never held whole.
        The value then has SQLite's BLOB type (the same UTF-8 bytes); models.JSONText reads it back as text."""
        raw = conn.connection.dbapi_connection
        if self.dialect == "postgresql" and self.engine.dialect.driver == "psycopg" and json_size(rep) >= BLOB_MIN:
            self._copy_report(conn, raw, sid, rep, replace=replace)
            return
        size = json_size(rep) if self.dialect == "sqlite" and hasattr(raw, "blobopen") else -1
        if size < BLOB_MIN:
            value: Any = dumps(rep)
        else:
            value = func.zeroblob(size)
        if replace:
            conn.execute(update(R).where(R.c.session_id == sid).values(report_json=value))
        else:
            conn.execute(insert(R).values(session_id=sid, report_json=value))
        del value
        if size < BLOB_MIN:
            return
        rowid = conn.execute(select(literal_column("rowid")).select_from(R).where(R.c.session_id == sid)).scalar_one()
        with raw.blobopen(R.name, "report_json", rowid) as blob:
            for data in json_bytes(rep):
                blob.write(data)

    @staticmethod
    def _copy_report(conn: Any, raw: Any, sid: str, rep: dict[str, Any], *, replace: bool) -> None:
        """PostgreSQL (psycopg 3): the report row sent by ``COPY ... FROM STDIN`` a piece of its JSON at a time, in
        the same transaction; a bound text would be the JSON text, its encoded bytes and libpq's copy of them.  In
        COPY's text format a backslash, line break, carriage return and tab are escaped (compact JSON holds no raw
        control character: only its backslashes change)."""
        if replace:
            conn.execute(delete(R).where(R.c.session_id == sid))
        with raw.cursor() as cur, cur.copy(f"COPY {R.name} (session_id, report_json) FROM STDIN") as cp:
            cp.write(sid.encode("utf-8") + b"\t")
            for data in json_bytes(rep):
                cp.write(data.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
                         .replace(b"\t", b"\\t"))
            cp.write(b"\n")

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
        if self.dialect == "postgresql":
            return self._get_json_pg(sid)
        with self._read() as conn:
            row = conn.execute(select(R.c.report_json).where(R.c.session_id == sid)).first()
        if row is None:
            raise SessionNotFound(sid)
        return row[0]

    def _get_json_pg(self, sid: str) -> str:
        """PostgreSQL: the report JSON read by :meth:`_pg_text` in one REPEATABLE READ transaction, so the slices
        are slices of one stored text."""
        with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            with conn.begin():
                return self._pg_text(conn, sid)

    @staticmethod
    def _pg_text(conn: Any, sid: str, *, lock: bool = False) -> str:
        """PostgreSQL: the report JSON of *sid* read on *conn* in at most :data:`PG_PIECES` slices of at least
        :data:`BLOB_MIN` characters (``substr``).  *lock* (inside a write transaction, READ COMMITTED): the row is
        read ``FOR SHARE``, so no other transaction replaces it between the slices.

        Fetched whole, one long text is held three times in this process at once: in libpq's input buffer (which
        the pooled connection then keeps at that size), in the PGresult copied from it, and as the str psycopg
        decodes; a slice costs that for its own size only.  The number of slices is bounded, not their size: a
        compressed (TOAST) text is decompressed from its start up to the slice asked for, so slices of a fixed
        size would cost time quadratic in the text; at most PG_PIECES of them cost at most PG_PIECES passes."""
        n = func.length(R.c.report_json)
        q = select(n, case((n < BLOB_MIN, R.c.report_json), else_=None)).where(R.c.session_id == sid)
        row = conn.execute(q.with_for_update(read=True) if lock else q).first()
        if row is None:
            raise SessionNotFound(sid)
        size, whole = row
        if whole is not None:
            return whole
        step = max(BLOB_MIN, -(-size // PG_PIECES))
        parts = [conn.execute(select(func.substr(R.c.report_json, start, step))
                              .where(R.c.session_id == sid)).scalar_one()
                 for start in range(1, size + 1, step)]
        text = "".join(parts)
        del parts
        if len(text) != size:
            raise StoreError(f"session {sid}: its report changed while it was read; try again")
        return text

    def _load(self, conn: Any, sid: str) -> dict[str, Any]:
        """The stored report of *sid*, read inside the caller's write transaction *conn* (on PostgreSQL in
        bounded slices, the row locked against replacement meanwhile: :meth:`_pg_text`)."""
        if self.dialect == "postgresql":
            return json.loads(self._pg_text(conn, sid, lock=True))
        text = conn.execute(select(R.c.report_json).where(R.c.session_id == sid)).scalar()
        if text is None:
            raise SessionNotFound(sid)
        return json.loads(text)

    def get(self, sid: str) -> dict[str, Any]:
        """The stored (redacted) report of session *sid*."""
        return json.loads(self.get_json(sid))

    def exists(self, sid: str) -> bool:
        with self._read() as conn:
            return conn.execute(select(S.c.id).where(S.c.id == sid)).first() is not None

    def info(self, sid: str) -> dict[str, Any]:
        """The review data of a session: status, verdict, summary columns, note count."""
        with self._read() as conn:
            row = conn.execute(select(*search.list_columns()).where(S.c.id == sid)).first()
            if row is None:
                raise SessionNotFound(sid)
            n = conn.execute(select(func.count()).select_from(N).where(N.c.session_id == sid)).scalar_one()
        d = search.row_dict(row)
        d["note_count"] = n
        return d

    # ------------------------------------------------------------------------------------------ listing
    def list_sessions(self, query: str = "", host: str | None = None, gpu: str | None = None,
                      verdict: str | None = None, status: str | None = None, since: Any = None, until: Any = None,
                      page: int = 1, page_size: int = 50) -> tuple[list[dict[str, Any]], int]:
        """One page of sessions, newest first, and the total that match (see ``search.list_sessions``)."""
        return search.list_sessions(self, query=query, host=host, gpu=gpu, verdict=verdict, status=status,
                                    since=since, until=until, page=page, page_size=page_size)

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

    # ------------------------------------------------------------------------------------------ bundles
    def export_bundle(self, sid: str, mask_identity: bool = False) -> bytes:
        """The shareable bundle of a session: secrets are redacted again, identity masked on request.

        The bundle is the session and its checksum, about the size of the session's logs.  Made by
        :meth:`write_bundle` into a temporary file and read back once the session is let go, so the bytes are the
        only large thing held when they are returned.  The bundle with its Markdown and HTML renderings
        (``sessions export --with-reports``) is about three times the logs: it is only ever written to a file,
        by ``write_bundle(sid, fp, reports=True)``, never returned as bytes (issue 16: memory <= 3x the input)."""
        import tempfile

        with tempfile.TemporaryFile() as fp:
            size = self.write_bundle(sid, fp, mask_identity=mask_identity)
            fp.seek(0)
            data = fp.read(size)
        return data

    def write_bundle(self, sid: str, fp: Any, mask_identity: bool = False, *, reports: bool = False) -> int:
        """:meth:`export_bundle` written to the binary file *fp* as it is made (never held in memory); returns the
        number of bytes written."""
        session = redact_report(self.get(sid), mask_identity=mask_identity)
        return write_bundle(session, fp, reports=reports)

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
        held = ""  # a CR that ends a write waits for the next: a terminal's sanitiser sees a CR LF whole
        for piece in (iter_markdown(session) if fmt == "md" else iter_html(session)):
            for i in range(0, len(piece), 1 << 20):
                part = held + piece[i:i + (1 << 20)]
                held = "\r" if part.endswith("\r") else ""
                data = (part[:-1] if held else part).encode("utf-8")
                fp.write(data)
                n += len(data)
        if held:
            fp.write(b"\r")
            n += 1
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
        del session
        want = red.get("session_id")
        digest = sha256_of(red) if _valid_uuid4(want) else None  # what is stored as report_sha256 under that id

        def tx(conn: Any) -> dict[str, Any]:
            sid = want if _valid_uuid4(want) else None
            if sid is not None:  # the stored checksum decides: the stored report is never read (it may be long)
                stored = conn.execute(select(S.c.report_sha256).where(S.c.id == sid)).first()
                if stored is not None:
                    if stored[0] == digest:
                        return {"id": sid, "warnings": warnings, "existing": True}
                    warnings.append(f"a different session with id {sid} already exists; imported under a new id")
                    sid = None
            else:
                warnings.append("the bundle's session id is not a random UUID; imported under a new id")
            if sid is None:
                sid = str(uuid.uuid4())
                red["session_id"] = sid
            self._insert(conn, sid, red, imported=True, digest=digest if sid == want else None)
            return {"id": sid, "warnings": warnings, "existing": False}

        return self._write(tx)

    # ------------------------------------------------------------------------------------------ re-diagnosis
    # The store keeps sessions; it does not diagnose them. diagnostics.sessions composes a re-diagnosis from
    # these two primitives and the service's ``rediagnose``.
    def prepare(self, report: dict[str, Any]) -> dict[str, Any]:
        """*report* as it would be stored: secrets redacted, the removals listed under "redactions"."""
        return _redact_noting(report, False)

    def replace_report(self, sid: str, report: dict[str, Any], *, note: str | None = None) -> None:
        """Replace the stored report of session *sid* (its probes, facts, diagnoses, generation, summary columns
        and fleet rows) by *report*, redacted again here, and add *note* as gpu-doctor's, in one transaction."""
        new = _redact_noting(report, False)
        new["session_id"] = sid

        def tx(conn: Any) -> None:
            row = conn.execute(select(S.c.created_at, S.c.host).where(S.c.id == sid)).first()
            if row is None:
                raise SessionNotFound(sid)
            fleet.write(conn, sid, row.created_at, row.host, new)
            for t in (G, D, F, P):
                conn.execute(delete(t).where(t.c.session_id == sid))
            self._put_report(conn, sid, new, replace=True)
            conn.execute(update(S).where(S.c.id == sid).values(
                report_sha256=sha256_of(new), updated_at=utcnow(),
                kb_version=str(new.get("kb_version") or "")[:64], **summarise(new)))
            self._insert_children(conn, sid, new)
            if note:
                conn.execute(insert(N).values(session_id=sid, author="gpu-doctor", text=redact_text(note),
                                              created_at=utcnow()))

        self._write(tx)

    def refresh_fleet(self, sid: str) -> None:
        """Derive session *sid*'s fleet rows again from its stored report (today's verdict rule)."""

        def tx(conn: Any) -> None:
            row = conn.execute(select(S.c.created_at, S.c.host).where(S.c.id == sid)).first()
            if row is None:
                raise SessionNotFound(sid)
            fleet.write(conn, sid, row.created_at, row.host, self._load(conn, sid))

        self._write(tx)

    def ids_after(self, last: str = "", limit: int = 200) -> list[str]:
        """Up to *limit* session ids greater than *last*, in id order (for walking every session in batches)."""
        with self._read() as conn:
            return [r[0] for r in conn.execute(select(S.c.id).where(S.c.id > last).order_by(S.c.id).limit(limit))]


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
