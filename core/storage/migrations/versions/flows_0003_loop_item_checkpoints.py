"""loop item checkpoints: the completed items of a loop still running, reused when its execution resumes

Revision ID: flows_0003
Revises: flows_0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = "flows_0003"
down_revision = "flows_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "flow_loop_items",
        sa.Column("execution_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("step_id", sa.String(length=100), nullable=False),
        sa.Column("item_index", sa.Integer(), nullable=False),
        sa.Column("item", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=True),
        sa.Column("result", sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["execution_id"], ["flow_executions.id"], name=op.f("fk_flow_loop_items_execution_id_flow_executions"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_flow_loop_items_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flow_loop_items")),
        sa.UniqueConstraint("execution_id", "position", "item_index", name=op.f("uq_flow_loop_items_execution_id_position_item_index")),
    )
    with op.batch_alter_table("flow_loop_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_flow_loop_items_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    op.drop_table("flow_loop_items")
