"""workspace audit events

Revision ID: tenancy_0004
Revises: tenancy_0003
Create Date: 2026-11-27 23:30:00.000000
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import patchbay.core.storage.base

revision = "tenancy_0004"
down_revision = "tenancy_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workspace_audit_events",
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("actor_kind", sa.String(length=20), nullable=False),
        sa.Column("actor_id", sa.String(length=200), nullable=True),
        sa.Column("actor_label", sa.String(length=320), nullable=True),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.String(length=200), nullable=True),
        sa.Column("details", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_workspace_audit_events_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_audit_events")),
    )
    with op.batch_alter_table("workspace_audit_events", schema=None) as batch_op:
        batch_op.create_index("ix_workspace_audit_events_workspace_id_created_at", ["workspace_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_workspace_audit_events_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workspace_audit_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workspace_audit_events_workspace_id"))
        batch_op.drop_index("ix_workspace_audit_events_workspace_id_created_at")
    op.drop_table("workspace_audit_events")
