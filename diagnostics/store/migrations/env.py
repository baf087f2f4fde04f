"""Alembic environment: always called programmatically by diagnostics.store.migrate(), which passes an open
connection (already inside a transaction that holds the migration lock) in config.attributes."""
from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
