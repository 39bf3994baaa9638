"""durable runs: executions wait in the database (resume_at) and hold a lease while running;
approvals that executions wait for

Revision ID: flows_0002
Revises: flows_0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text

import patchbay.core.storage.base

revision = "flows_0002"
down_revision = "flows_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("flow_executions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resume_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("lease_until", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_flow_executions_status_lease", ["status", "lease_until"], unique=False)
    op.create_table(
        "flow_approvals",
        sa.Column("execution_id", sa.String(length=36), nullable=False),
        sa.Column("flow_id", sa.String(length=36), nullable=False),
        sa.Column("step_id", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("message", Text(), nullable=True),
        sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("decided_by", sa.String(length=320), nullable=True),
        sa.Column("decided_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("note", Text(), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["execution_id"], ["flow_executions.id"], name=op.f("fk_flow_approvals_execution_id_flow_executions"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_flow_approvals_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flow_approvals")),
        sa.UniqueConstraint("execution_id", "step_id", name=op.f("uq_flow_approvals_execution_id_step_id")),
    )
    with op.batch_alter_table("flow_approvals", schema=None) as batch_op:
        batch_op.create_index("ix_flow_approvals_workspace_status", ["workspace_id", "status"], unique=False)
        batch_op.create_index(batch_op.f("ix_flow_approvals_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    op.drop_table("flow_approvals")
    with op.batch_alter_table("flow_executions", schema=None) as batch_op:
        batch_op.drop_index("ix_flow_executions_status_lease")
        batch_op.drop_column("lease_until")
        batch_op.drop_column("resume_at")
