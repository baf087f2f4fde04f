"""Alembic migrations of the session store; run by diagnostics.store.migrate()."""
