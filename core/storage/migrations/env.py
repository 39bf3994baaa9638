"""Alembic environment: runs on the connection handed over by ``patchbay.core.storage.migrate``."""

from alembic import context

from patchbay.core.storage.models import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
