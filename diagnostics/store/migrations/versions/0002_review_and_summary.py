"""v2: review workflow (status, notes) and summary columns for list/search/filter, back-filled from the
stored report JSON of every existing session; the report JSON moves out of ``sessions`` into
``session_reports`` so that listing and searching scan narrow rows (in v1 every list read the big JSON).

Revision ID: 0002
Revises: 0001
"""
import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_NEW_COLUMNS = [
    sa.Column("saved_at", sa.DateTime(), nullable=True),
    sa.Column("updated_at", sa.DateTime(), nullable=True),
    sa.Column("status", sa.String(16), nullable=False, server_default="new"),
    sa.Column("verdict", sa.String(16), nullable=False, server_default="incomplete"),
    sa.Column("top_diagnosis_id", sa.String(128), nullable=True),
    sa.Column("top_severity", sa.String(16), nullable=True),
    sa.Column("diagnosis_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("gpu_names", sa.Text(), nullable=False, server_default=""),
    sa.Column("torch_version", sa.String(128), nullable=True),
    sa.Column("search_text", sa.Text(), nullable=False, server_default=""),
    sa.Column("imported", sa.Boolean(), nullable=False, server_default=sa.false()),
]


def upgrade() -> None:
    for col in _NEW_COLUMNS:
        op.add_column("sessions", col)
    op.create_index("ix_sessions_host_created", "sessions", ["host", "created_at"])
    op.create_index("ix_sessions_verdict_created", "sessions", ["verdict", "created_at"])
    op.create_index("ix_sessions_status_created", "sessions", ["status", "created_at"])
    op.create_index("ix_sessions_top_diagnosis", "sessions", ["top_diagnosis_id"])
    op.create_table(
        "notes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("session_id", sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("author", sa.String(128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_notes_session_id", "notes", ["session_id"])

    op.create_table(
        "session_reports",
        sa.Column("session_id", sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("report_json", sa.Text(), nullable=False),
    )
    op.execute("INSERT INTO session_reports (session_id, report_json) SELECT id, report_json FROM sessions")

    # back-fill the summary columns from the stored reports, in batches
    from diagnostics.store.summary import summarise

    conn = op.get_bind()
    sessions = sa.table("sessions", sa.column("id"), sa.column("created_at"), sa.column("saved_at"),
                        sa.column("updated_at"),
                        *[sa.column(c.name) for c in _NEW_COLUMNS if c.name not in ("saved_at", "updated_at")])
    reports = sa.table("session_reports", sa.column("session_id"), sa.column("report_json"))
    last = ""
    while True:
        rows = conn.execute(sa.select(sessions.c.id, reports.c.report_json, sessions.c.created_at)
                            .join(reports, reports.c.session_id == sessions.c.id)
                            .where(sessions.c.id > last).order_by(sessions.c.id).limit(500)).all()
        if not rows:
            break
        for sid, rj, created in rows:
            try:
                summ = summarise(json.loads(rj))
            except ValueError:
                continue
            conn.execute(sessions.update().where(sessions.c.id == sid)
                         .values(saved_at=created, updated_at=created, **summ))
        last = rows[-1][0]
    # SQLite >= 3.35 and PostgreSQL drop a column in place (checked before migrating: diagnostics.store.migrate)
    op.execute("ALTER TABLE sessions DROP COLUMN report_json")


def downgrade() -> None:
    op.add_column("sessions", sa.Column("report_json", sa.Text(), nullable=False, server_default=""))
    op.execute("UPDATE sessions SET report_json = (SELECT r.report_json FROM session_reports r "
               "WHERE r.session_id = sessions.id)")
    op.drop_table("session_reports")
    op.drop_table("notes")
    for name in ("ix_sessions_top_diagnosis", "ix_sessions_status_created", "ix_sessions_verdict_created",
                 "ix_sessions_host_created"):
        op.drop_index(name, table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        for col in reversed(_NEW_COLUMNS):
            batch.drop_column(col.name)
