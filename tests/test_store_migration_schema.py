"""The schema each Alembic revision builds, on SQLite and PostgreSQL, stays exactly what it was when the revision
was written: the revisions are history (databases in the field were made by them), so a change to how a revision is
written must leave what it creates untouched.  The snapshot (tests/data/migration_schema.json) was taken from the
revisions as first written; `python -m tests.test_store_migration_schema` rewrites it (only for a new revision)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from sqlalchemy import text

from diagnostics.store import make_engine, migrate
from tests.pgserver import db_url, pg_url  # noqa: F401

SNAPSHOT = Path(__file__).parent / "data" / "migration_schema.json"
REVISIONS = ("0001", "0002", "0003", "0004")

_PG_QUERIES = (
    "SELECT table_name, column_name, ordinal_position, data_type, character_maximum_length, is_nullable, "
    "column_default FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 3",
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2",
)


def schema_of(engine) -> list[list]:
    """Every table, column, index, trigger and constraint, as the database itself reports it."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            queries = ("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",)
        else:
            queries = _PG_QUERIES
        return [[list(row) for row in conn.execute(text(q))] for q in queries]


def schemas(url: str) -> dict[str, list]:
    """The schema after each revision in turn, then after downgrading to nothing."""
    engine = make_engine(url)
    try:
        out = {rev: (migrate(engine, rev), schema_of(engine))[1] for rev in REVISIONS}
        from alembic import command

        from diagnostics.store.engine import _alembic_config

        with engine.begin() as conn:
            command.downgrade(_alembic_config(conn), "base")
        out["base"] = schema_of(engine)
        return out
    finally:
        engine.dispose()


def test_each_revision_builds_the_schema_it_always_built(db_url: str) -> None:  # noqa: F811
    dialect = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(schemas(db_url)))  # tuples and the like as JSON has them
    for rev in (*REVISIONS, "base"):
        for i, part in enumerate(got[rev]):
            assert part == want[f"{dialect} {rev} {i}"], f"revision {rev} on {dialect} builds another schema"


if __name__ == "__main__":  # pragma: no cover - rewrites the snapshot
    import tempfile

    import tests.pgserver as pgs

    snap = {}
    with tempfile.TemporaryDirectory() as d:
        snap["sqlite"] = schemas(f"sqlite:///{d}/s.db")
    server = pgs.PgServer(pgs.find_bindir())
    try:
        server.start()
        snap["postgresql"] = schemas(server.create_database("schema_snapshot"))
    finally:
        server.stop()
    rows = ",\n".join(f'  "{d} {r} {i}": [\n' + ",\n".join("   " + json.dumps(row) for row in part) + "\n  ]"
                      for d in sorted(snap) for r in snap[d] for i, part in enumerate(snap[d][r]))
    SNAPSHOT.write_text("{\n" + rows + "\n}\n", encoding="utf-8")  # one row a line: a diff names what changed
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
