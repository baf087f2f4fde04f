"""Schema migrations: a database made by the v1 schema opens (and is upgraded) in this version."""
from __future__ import annotations

import json
from datetime import datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from diagnostics.store import Store, StoreError, current_revision, head_revision, make_engine, metadata, migrate
from diagnostics.store.summary import dumps, sha256_of
from tests.pgserver import db_url, pg_url  # noqa: F401
from tests.test_store_common import sample_report


def _insert_v1_session(engine, report: dict) -> None:
    """Write a session the way version 1 of the schema stored it (no status, no summary columns)."""
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sessions (id, created_at, host, source, tool_version, kb_version, report_json,"
                          " report_sha256) VALUES (:id, :c, :h, 'live', '0.0.9', '2026.10', :j, :s)"),
                     {"id": report["session_id"], "c": datetime(2026, 10, 1, 12, 0), "h": report["host"],
                      "j": dumps(report), "s": sha256_of(report)})
        for name, value in report["facts"].items():
            conn.execute(text("INSERT INTO facts (session_id, name, value_json) VALUES (:i, :n, :v)"),
                         {"i": report["session_id"], "n": name, "v": json.dumps(value)})


def test_v1_database_opens_in_this_version(db_url: str) -> None:  # noqa: F811
    engine = make_engine(db_url)
    assert migrate(engine, "0001") == "0001"
    cols = {c["name"] for c in inspect(engine).get_columns("sessions")}
    assert "status" not in cols and "verdict" not in cols and "report_json" in cols
    assert not {"notes", "session_reports"} & set(inspect(engine).get_table_names())
    old = sample_report()
    old["facts"].pop("env.HF_TOKEN")  # v1 of the tool stored what it had; keep the example simple
    _insert_v1_session(engine, old)
    engine.dispose()

    store = Store(db_url)  # upgrades
    try:
        assert current_revision(store.engine) == head_revision() != "0001"
        assert "report_json" not in {c["name"] for c in inspect(store.engine).get_columns("sessions")}
        assert store.get(old["session_id"]) == old
        rows, total = store.list_sessions()
        assert total == 1
        r = rows[0]
        assert (r["status"], r["verdict"], r["top_diagnosis_id"]) == ("new", "problems", "hip-no-binary-for-gpu")
        assert r["gpu_names"] == ["AMD Radeon RX 7900 XTX"] and r["torch_version"] == "2.5.1+rocm6.2"
        assert store.list_sessions(query="gfx1100")[1] == 1, "search text was back-filled"
        store.add_note(old["session_id"], "support", "opened after the upgrade")
        assert len(store.notes(old["session_id"])) == 1
        new_id = store.save(sample_report())
        assert store.count() == 2 and store.get(new_id)
    finally:
        store.close()
    # opening again is a no-op
    again = Store(db_url)
    assert again.count() == 2
    again.close()


def test_migrations_match_the_models(db_url: str) -> None:  # noqa: F811
    """The tables the migrations build are exactly the SQLModel classes (no drift between the two)."""
    store = Store(db_url)
    try:
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        # objects that exist on purpose outside the SQLModel classes (see models.py and revision 0003)
        extra_tables = {"alembic_version", "sessions_fts", "sessions_fts_data", "sessions_fts_idx",
                        "sessions_fts_content", "sessions_fts_docsize", "sessions_fts_config"}
        diff = [d for d in diff if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name in extra_tables)
                and not (isinstance(d, tuple) and d[0] == "remove_index" and d[1].name == "ix_sessions_search_trgm")]
        assert diff == []
        if store.dialect == "postgresql":
            with store.engine.connect() as conn:
                assert conn.execute(text("SELECT 1 FROM pg_indexes WHERE indexname='ix_sessions_search_trgm'")).first()
    finally:
        store.close()


def test_newer_database_is_refused_clearly(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    store.save(sample_report())
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num='0099_from_the_future'"))
    store.close()
    with pytest.raises(StoreError, match="newer gpu-doctor"):
        Store(db_url)
