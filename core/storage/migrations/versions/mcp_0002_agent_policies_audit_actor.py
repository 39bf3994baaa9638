"""agent policies; the client and user of an MCP tool call in the proxy's audit (issue 27)

Revision ID: mcp_0002
Revises: mcp_0001
Create Date: 2026-11-27 13:50:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import patchbay.core.storage.base

revision = "mcp_0002"
down_revision = "mcp_0001"
branch_labels = None
depends_on = ("connections_0002",)


def upgrade() -> None:
    op.create_table(
        "agent_policies",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("approval_tools", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=False),
        sa.Column("updated_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_agent_policies_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_policies")),
        sa.UniqueConstraint("workspace_id", name=op.f("uq_agent_policies_workspace_id")),
    )
    with op.batch_alter_table("agent_policies", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_agent_policies_workspace_id"), ["workspace_id"], unique=False)
    with op.batch_alter_table("proxy_call_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("user_id", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("proxy_call_logs", schema=None) as batch_op:
        batch_op.drop_column("user_id")
        batch_op.drop_column("client_id")
    with op.batch_alter_table("agent_policies", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agent_policies_workspace_id"))
    op.drop_table("agent_policies")
