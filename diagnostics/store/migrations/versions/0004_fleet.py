"""v4: the fleet view (diagnostics/store/stats.py).

- session_facets: one row per (session, dimension, value) -- confirmed causes, guesses, GPU names, gfx targets,
  ROCm and torch versions, the verdict recomputed by diagnostics.verdicts -- with the session's created_at, so
  counts by value and by day/week are index range scans without reading any report JSON.
- session_signatures: the unexplained queue, one row per failing check that no confirmed cause explains (or per
  guess-only session), keyed by a hash of the normalised error line.

Both are back-filled from the stored report JSON of every existing session (in batches), and the sessions'
verdict column is recomputed by today's rule (diagnostics.verdicts.compute) on the way.

Revision ID: 0004
Revises: 0003
"""
import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _fk() -> sa.Column:
    return sa.Column("session_id", sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "session_facets",
        sa.Column("id", sa.Integer(), primary_key=True),
        _fk(),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("dim", sa.String(16), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
    )
    op.create_index("ix_session_facets_session_id", "session_facets", ["session_id"])
    op.create_index("ix_facets_dim_value_created", "session_facets", ["dim", "value", "created_at"])
    op.create_index("ix_facets_dim_created", "session_facets", ["dim", "created_at"])
    op.create_index("ix_facets_dim_verdict_value", "session_facets", ["dim", "verdict", "value", "status"])
    op.create_table(
        "session_signatures",
        sa.Column("id", sa.Integer(), primary_key=True),
        _fk(),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("sig", sa.String(16), nullable=False),
        sa.Column("signature", sa.Text(), nullable=False),
        sa.Column("check_id", sa.String(128), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("excerpt", sa.Text(), nullable=False),
    )
    op.create_index("ix_session_signatures_session_id", "session_signatures", ["session_id"])
    op.create_index("ix_signatures_sig_created", "session_signatures", ["sig", "created_at"])
    op.create_index("ix_signatures_created", "session_signatures", ["created_at"])

    from diagnostics.store.stats import derive_rows  # the same derivation as every save uses

    conn = op.get_bind()
    last = ""
    while True:
        rows = conn.execute(sa.text(
            "SELECT s.id, s.created_at, s.host, s.status, r.report_json FROM sessions s JOIN session_reports r "
            "ON r.session_id = s.id WHERE s.id > :last ORDER BY s.id LIMIT 500"), {"last": last}).all()
        if not rows:
            break
        facets: list = []
        sigs: list = []
        verdicts: list = []
        for sid, created, host, status, text in rows:
            try:
                rep = json.loads(text)
            except ValueError:
                continue
            f, s = derive_rows(sid, created, host, rep, status)
            verdicts += [{"i": sid, "v": x["value"]} for x in f if x["dim"] == "verdict"]
            facets += f
            sigs += s
        if facets:
            conn.execute(sa.table("session_facets", *[sa.column(c) for c in facets[0]]).insert(), facets)
        if verdicts:  # the verdict column by today's rule (a stored verdict is never trusted)
            conn.execute(sa.text("UPDATE sessions SET verdict = :v WHERE id = :i"), verdicts)
        if sigs:
            conn.execute(sa.table("session_signatures", *[sa.column(c) for c in sigs[0]]).insert(), sigs)
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_table("session_signatures")
    op.drop_table("session_facets")
