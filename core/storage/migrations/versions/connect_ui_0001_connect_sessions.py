"""connect sessions, connections.end_user_id

Revision ID: connect_ui_0001
Revises:
Create Date: 2026-11-23 13:35:00.000000
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import patchbay.core.storage.base

revision = "connect_ui_0001"
down_revision = None
branch_labels = ("connect_ui",)
depends_on = ("core_0001", "connections_0002")

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "connect_sessions",
        sa.Column("token_digest", sa.String(length=128), nullable=False),
        sa.Column("end_user_id", sa.String(length=255), nullable=False),
        sa.Column("end_user", JSON, nullable=False),
        sa.Column("allowed_providers", JSON, nullable=True),
        sa.Column("default_metadata", JSON, nullable=False),
        sa.Column("return_url", sa.Text(), nullable=True),
        sa.Column("reconnect_id", sa.String(length=36), nullable=True),
        sa.Column("connection_id", sa.String(length=36), nullable=True),
        sa.Column("approval_id", sa.String(length=36), nullable=True),
        sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("used_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_connect_sessions_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connect_sessions")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_connect_sessions_token_digest")),
    )
    with op.batch_alter_table("connect_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_connect_sessions_end_user_id"), ["end_user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_connect_sessions_workspace_id"), ["workspace_id"], unique=False)

    with op.batch_alter_table("connections", schema=None) as batch_op:
        batch_op.add_column(sa.Column("end_user_id", sa.String(length=255), nullable=True))
        batch_op.create_index(batch_op.f("ix_connections_end_user_id"), ["end_user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("connections", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_connections_end_user_id"))
        batch_op.drop_column("end_user_id")

    with op.batch_alter_table("connect_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_connect_sessions_workspace_id"))
        batch_op.drop_index(batch_op.f("ix_connect_sessions_end_user_id"))

    op.drop_table("connect_sessions")
