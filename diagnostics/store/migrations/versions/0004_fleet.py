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

from diagnostics.store.migrations.tables import create_tables

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


_TABLES = {
    "session_facets": ("id int pk, session_id fk, created_at datetime, dim str16, value str255, host str255, "
                       "verdict str16, status str16",
                       {"ix_session_facets_session_id": "session_id",
                        "ix_facets_dim_value_created": "dim value created_at",
                        "ix_facets_dim_created": "dim created_at",
                        "ix_facets_dim_verdict_value": "dim verdict value status"}),
    "session_signatures": ("id int pk, session_id fk, created_at datetime, host str255, reason str16, sig str16, "
                           "signature text, check_id str128, line text, excerpt text",
                           {"ix_session_signatures_session_id": "session_id",
                            "ix_signatures_sig_created": "sig created_at", "ix_signatures_created": "created_at"}),
}


def upgrade() -> None:
    create_tables(_TABLES)

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
