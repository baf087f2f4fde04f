"""v1: sessions with the full report JSON, probe results, facts, diagnoses, generation results.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _sid() -> sa.Column:
    return sa.Column("session_id", sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("tool_version", sa.String(64), nullable=False),
        sa.Column("kb_version", sa.String(64), nullable=False),
        sa.Column("report_json", sa.Text(), nullable=False),
        sa.Column("report_sha256", sa.String(64), nullable=False),
    )
    op.create_index("ix_sessions_created", "sessions", ["created_at", "id"])
    op.create_table(
        "probe_results",
        sa.Column("id", sa.Integer(), primary_key=True),
        _sid(),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("probe_id", sa.String(128), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("output_tail", sa.Text(), nullable=False),
        sa.Column("evidence_json", sa.Text(), nullable=False),
        sa.Column("facts_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_probe_results_session_id", "probe_results", ["session_id"])
    op.create_table(
        "facts",
        sa.Column("id", sa.Integer(), primary_key=True),
        _sid(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_facts_session_id", "facts", ["session_id"])
    op.create_index("ix_facts_name", "facts", ["name"])
    op.create_table(
        "diagnoses",
        sa.Column("id", sa.Integer(), primary_key=True),
        _sid(),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("diagnosis_id", sa.String(128), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("evidence_json", sa.Text(), nullable=False),
        sa.Column("fix", sa.Text(), nullable=False),
    )
    op.create_index("ix_diagnoses_session_id", "diagnoses", ["session_id"])
    op.create_index("ix_diagnoses_diagnosis_id", "diagnoses", ["diagnosis_id"])
    op.create_table(
        "generation_results",
        sa.Column("id", sa.Integer(), primary_key=True),
        _sid(),
        sa.Column("device", sa.String(16), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("new_tokens", sa.Integer(), nullable=True),
        sa.Column("tokens_per_s", sa.Float(), nullable=True),
        sa.Column("load_s", sa.Float(), nullable=True),
        sa.Column("ttft_s", sa.Float(), nullable=True),
        sa.Column("peak_rss_bytes", sa.BigInteger(), nullable=True),
        sa.Column("peak_gpu_bytes", sa.BigInteger(), nullable=True),
        sa.Column("result_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_generation_results_session_id", "generation_results", ["session_id"])


def downgrade() -> None:
    for t in ("generation_results", "diagnoses", "facts", "probe_results", "sessions"):
        op.drop_table(t)
