"""v1: sessions with the full report JSON, probe results, facts, diagnoses, generation results.

Revision ID: 0001
Revises:
"""
from alembic import op

from diagnostics.store.migrations.tables import create_tables

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


_TABLES = {
    "sessions": ("id str36 pk, created_at datetime, host str255, source str16, tool_version str64, kb_version str64, "
                 "report_json text, report_sha256 str64", {"ix_sessions_created": "created_at id"}),
    "probe_results": ("id int pk, session_id fk, position int, probe_id str128, title text, status str16, "
                      "duration_s float?, error text?, output_tail text, evidence_json text, facts_json text",
                      {"ix_probe_results_session_id": "session_id"}),
    "facts": ("id int pk, session_id fk, name str255, value_json text",
              {"ix_facts_session_id": "session_id", "ix_facts_name": "name"}),
    "diagnoses": ("id int pk, session_id fk, position int, diagnosis_id str128, title text, severity str16, "
                  "confidence float?, evidence_json text, fix text",
                  {"ix_diagnoses_session_id": "session_id", "ix_diagnoses_diagnosis_id": "diagnosis_id"}),
    "generation_results": ("id int pk, session_id fk, device str16?, model text?, new_tokens int?, "
                           "tokens_per_s float?, load_s float?, ttft_s float?, peak_rss_bytes bigint?, "
                           "peak_gpu_bytes bigint?, result_json text",
                           {"ix_generation_results_session_id": "session_id"}),
}


def upgrade() -> None:
    create_tables(_TABLES)


def downgrade() -> None:
    for t in ("generation_results", "diagnoses", "facts", "probe_results", "sessions"):
        op.drop_table(t)
