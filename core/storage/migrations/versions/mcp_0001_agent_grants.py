"""agent grants (issue 27)

Revision ID: mcp_0001
Revises:
Create Date: 2026-11-27 13:10:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import patchbay.core.storage.base

revision = "mcp_0001"
down_revision = None
branch_labels = ("mcp",)
depends_on = ("core_0001",)


def upgrade() -> None:
    op.create_table(
        "agent_grants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("client_id", sa.String(length=2048), nullable=False),
        sa.Column("end_user_id", sa.String(length=200), nullable=True),
        sa.Column("connection_ids", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=False),
        sa.Column("tools", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=True),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_agent_grants_user_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_agent_grants_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_grants")),
    )
    with op.batch_alter_table("agent_grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_agent_grants_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_agent_grants_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("agent_grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agent_grants_workspace_id"))
        batch_op.drop_index(batch_op.f("ix_agent_grants_user_id"))
    op.drop_table("agent_grants")
