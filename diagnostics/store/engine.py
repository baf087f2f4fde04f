"""The session store's database engine: where the database is, how to connect to it (SQLite in WAL mode with
``BEGIN IMMEDIATE`` writes, or PostgreSQL through psycopg), and the Alembic migrations that bring its schema up to
this code's revision under a lock."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import StaticPool

from .base import StoreError

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x6770_7564  # "gpud": advisory lock id for migrations


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
