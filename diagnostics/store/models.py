"""The tables of the session store (SQLModel), at the newest schema revision.

The schema is created and changed ONLY by the migrations in ``migrations/versions`` (Alembic); these classes
describe the head revision for queries, and a test checks that the migrations and these classes agree.

The full report JSON of each session is kept verbatim (``session_reports.report_json``) so a session round-trips
byte for byte; the other tables hold the same data broken out (facts, probe results, diagnoses, generation)
so support staff can query it and the KB can re-diagnose it, plus summary columns for list/search/filter.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import BigInteger, Column, DateTime, ForeignKey, Index, Text
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

metadata = SQLModel.metadata

STATUSES = ("new", "investigating", "resolved")
VERDICTS = ("healthy", "problems", "incomplete")


def _fk(nullable: bool = False) -> Column:
    return Column(ForeignKey("sessions.id", ondelete="CASCADE"), nullable=nullable, index=True)


class SessionRow(SQLModel, table=True):
    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_created", "created_at", "id"),
        Index("ix_sessions_host_created", "host", "created_at"),
        Index("ix_sessions_verdict_created", "verdict", "created_at"),
        Index("ix_sessions_status_created", "status", "created_at"),
        Index("ix_sessions_top_diagnosis", "top_diagnosis_id"),
        Index("ix_sessions_verdict_status_created", "verdict", "status", "created_at"),
        # plus, outside these classes (revision 0003): SQLite FTS5 trigram table sessions_fts with its
        # triggers, PostgreSQL pg_trgm GIN index ix_sessions_search_trgm
    )

    id: str = Field(primary_key=True, max_length=36)
    created_at: datetime = Field(sa_column=Column(DateTime, nullable=False))  # naive UTC
    host: str = Field(default="", max_length=255)
    source: str = Field(default="live", max_length=16)
    tool_version: str = Field(default="", max_length=64)
    kb_version: str = Field(default="", max_length=64)
    report_sha256: str = Field(max_length=64)
    # added in revision 0002 (the report JSON itself moved to session_reports, so listing and searching
    # scan narrow rows and never read the big JSON)
    saved_at: Optional[datetime] = Field(default=None, sa_column=Column(DateTime))
    updated_at: Optional[datetime] = Field(default=None, sa_column=Column(DateTime))
    status: str = Field(default="new", max_length=16)
    verdict: str = Field(default="incomplete", max_length=16)
    top_diagnosis_id: Optional[str] = Field(default=None, max_length=128)
    top_severity: Optional[str] = Field(default=None, max_length=16)
    diagnosis_count: int = 0
    gpu_names: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    torch_version: Optional[str] = Field(default=None, max_length=128)
    search_text: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    imported: bool = False


class JSONText(TypeDecorator):
    """Text.  On SQLite a long report's JSON is written through a blob handle (Store._put_report), so the value
    is stored as its UTF-8 bytes (SQLite's BLOB type); it is read back as the same text."""
    impl = Text
    cache_ok = True

    def process_result_value(self, value: object, dialect: object) -> object:
        return value.decode("utf-8") if isinstance(value, bytes) else value


class ReportRow(SQLModel, table=True):
    """The full (redacted) report JSON of a session, verbatim: the source of truth for get()/export."""
    __tablename__ = "session_reports"
    session_id: str = Field(sa_column=Column(ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True))
    report_json: str = Field(sa_column=Column(JSONText, nullable=False))


class ProbeResultRow(SQLModel, table=True):
    __tablename__ = "probe_results"
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    position: int
    probe_id: str = Field(max_length=128)
    title: str = Field(default="", sa_column=Column(Text, nullable=False))
    status: str = Field(max_length=16)
    duration_s: Optional[float] = None
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    output_tail: str = Field(default="", sa_column=Column(Text, nullable=False))
    evidence_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    facts_json: str = Field(default="{}", sa_column=Column(Text, nullable=False))


class FactRow(SQLModel, table=True):
    __tablename__ = "facts"
    __table_args__ = (Index("ix_facts_name", "name"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    name: str = Field(max_length=255)
    value_json: str = Field(sa_column=Column(Text, nullable=False))


class DiagnosisRow(SQLModel, table=True):
    __tablename__ = "diagnoses"
    __table_args__ = (Index("ix_diagnoses_diagnosis_id", "diagnosis_id"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    position: int
    diagnosis_id: str = Field(max_length=128)
    title: str = Field(default="", sa_column=Column(Text, nullable=False))
    severity: str = Field(default="", max_length=16)
    confidence: Optional[float] = None
    evidence_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    fix: str = Field(default="", sa_column=Column(Text, nullable=False))


class GenerationRow(SQLModel, table=True):
    __tablename__ = "generation_results"
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    device: Optional[str] = Field(default=None, max_length=16)
    model: Optional[str] = Field(default=None, sa_column=Column(Text))
    new_tokens: Optional[int] = None
    tokens_per_s: Optional[float] = None
    load_s: Optional[float] = None
    ttft_s: Optional[float] = None
    peak_rss_bytes: Optional[int] = Field(default=None, sa_column=Column(BigInteger))
    peak_gpu_bytes: Optional[int] = Field(default=None, sa_column=Column(BigInteger))
    result_json: str = Field(sa_column=Column(Text, nullable=False))


class NoteRow(SQLModel, table=True):
    __tablename__ = "notes"
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    author: str = Field(max_length=128)
    text: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime, nullable=False))


class FacetRow(SQLModel, table=True):
    """One fleet dimension value of a session (revision 0004), derived from its report by store/stats.py:
    dim is cause (a confirmed problem), possible (a guess), gpu, gfx, rocm, torch or verdict (recomputed by
    diagnostics.verdicts, never the stored one). created_at is the session's, so time buckets need no join."""
    __tablename__ = "session_facets"
    __table_args__ = (Index("ix_facets_dim_value_created", "dim", "value", "created_at"),
                      Index("ix_facets_dim_created", "dim", "created_at"),
                      Index("ix_facets_dim_verdict_value", "dim", "verdict", "value", "status"))
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    created_at: datetime = Field(sa_column=Column(DateTime, nullable=False))
    dim: str = Field(max_length=16)
    value: str = Field(max_length=255)
    # the session's host, verdict (today's rule) and review status, so the common filters need no join
    host: str = Field(default="", max_length=255)
    verdict: str = Field(default="", max_length=16)
    status: str = Field(default="new", max_length=16)


class SignatureRow(SQLModel, table=True):
    """A failure no confirmed cause explains (reason "unexplained") or a session with guesses only (reason
    "possible"), keyed by the normalised signature of its error line (revision 0004)."""
    __tablename__ = "session_signatures"
    __table_args__ = (Index("ix_signatures_sig_created", "sig", "created_at"),
                      Index("ix_signatures_created", "created_at"))
    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(sa_column=_fk())
    created_at: datetime = Field(sa_column=Column(DateTime, nullable=False))
    host: str = Field(default="", max_length=255)
    reason: str = Field(max_length=16)
    sig: str = Field(max_length=16)
    signature: str = Field(sa_column=Column(Text, nullable=False))
    check_id: str = Field(default="", max_length=128)
    line: str = Field(default="", sa_column=Column(Text, nullable=False))
    excerpt: str = Field(default="", sa_column=Column(Text, nullable=False))
