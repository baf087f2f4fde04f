"""v3: fast text search and combined filters.

- SQLite: an FTS5 table with the trigram tokenizer (SQLite >= 3.34) over sessions.search_text and
  sessions.gpu_names, kept in step by triggers; a query word of 3+ characters is looked up there (substring
  semantics, like LIKE '%word%').
- PostgreSQL: a pg_trgm GIN index on sessions.search_text, used by LIKE '%word%' (pg_trgm is a trusted
  extension since PostgreSQL 13; where it cannot be created the index is skipped and search scans).
- Both: an index on (verdict, status, created_at) for the support queue ("problems, still new").

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

FTS_TRIGGERS = {
    "sessions_fts_ai": "CREATE TRIGGER sessions_fts_ai AFTER INSERT ON sessions BEGIN "
                       "INSERT INTO sessions_fts (session_id, search_text, gpus) "
                       "VALUES (new.id, new.search_text, new.gpu_names); END",
    "sessions_fts_au": "CREATE TRIGGER sessions_fts_au AFTER UPDATE OF search_text, gpu_names ON sessions BEGIN "
                       "DELETE FROM sessions_fts WHERE session_id = old.id; "
                       "INSERT INTO sessions_fts (session_id, search_text, gpus) "
                       "VALUES (new.id, new.search_text, new.gpu_names); END",
    "sessions_fts_ad": "CREATE TRIGGER sessions_fts_ad AFTER DELETE ON sessions BEGIN "
                       "DELETE FROM sessions_fts WHERE session_id = old.id; END",
}


def upgrade() -> None:
    op.create_index("ix_sessions_verdict_status_created", "sessions", ["verdict", "status", "created_at"])
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        op.execute("CREATE VIRTUAL TABLE sessions_fts USING fts5(session_id UNINDEXED, search_text, gpus, "
                   "tokenize = 'trigram')")
        op.execute("INSERT INTO sessions_fts (session_id, search_text, gpus) "
                   "SELECT id, search_text, gpu_names FROM sessions")
        for sql in FTS_TRIGGERS.values():
            op.execute(sql)
    elif conn.dialect.name == "postgresql":
        available = conn.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")).first()
        if available:
            sp = conn.begin_nested()
            try:
                conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
                sp.commit()
            except sa.exc.DBAPIError:
                sp.rollback()
        if conn.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")).first():
            op.execute("CREATE INDEX ix_sessions_search_trgm ON sessions USING gin (search_text gin_trgm_ops)")


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for name in FTS_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS sessions_fts")
    elif conn.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_sessions_search_trgm")
    op.drop_index("ix_sessions_verdict_status_created", table_name="sessions")
