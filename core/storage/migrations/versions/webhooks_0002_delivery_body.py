"""delivery body: the bytes every attempt of a delivery sends

Nullable: deliveries queued before (or by a process of the previous release during a rolling
upgrade) have none, and their attempts serialize the stored event as before.

Revision ID: webhooks_0002
Revises: webhooks_0001
Create Date: 2026-11-26 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "webhooks_0002"
down_revision = "webhooks_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("body", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_column("body")
