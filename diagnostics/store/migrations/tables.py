"""Tables for the revisions, written as words: one string of columns and a map of indexes.

A column is ``name type``, its type one of ``int``, ``bigint``, ``float``, ``text``, ``datetime`` or ``strN``
(a string of at most N characters); a ``?`` after the type makes it nullable (columns are NOT NULL otherwise), a
third word ``pk`` makes it the primary key. ``session_id fk`` is the column every per-session table has: the
session's id, a foreign key to ``sessions.id``, deleted with the session. An index is ``name: "column column"``.

The revisions are history: what a revision creates through these words must stay what it created when it was
written (tests/test_store_migration_schema.py holds the schema of every revision).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

_TYPES = {"int": sa.Integer, "bigint": sa.BigInteger, "float": sa.Float, "text": sa.Text, "datetime": sa.DateTime}


def column(spec: str) -> sa.Column:
    name, kind, *rest = spec.split()
    if kind == "fk":
        return sa.Column(name, sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)
    nullable = kind.endswith("?")
    kind = kind.rstrip("?")
    type_ = sa.String(int(kind[3:])) if kind.startswith("str") else _TYPES[kind]()
    if rest == ["pk"]:
        return sa.Column(name, type_, primary_key=True)
    assert not rest, f"unknown words in the column {spec!r}"
    return sa.Column(name, type_, nullable=nullable)


def create_tables(tables: dict[str, tuple[str, dict[str, str]]]) -> None:
    """Each table in turn, its indexes right after it."""
    for table, (columns, indexes) in tables.items():
        op.create_table(table, *(column(c) for c in columns.split(",")))
        for index, names in indexes.items():
            op.create_index(index, table, names.split())
