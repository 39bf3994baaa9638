"""api key expiry

Revision ID: tenant_rules_0001
Revises:
Create Date: 2026-11-23 13:55:00.000000
"""

import sqlalchemy as sa
from alembic import op

import patchbay.core.storage.base

revision = "tenant_rules_0001"
down_revision = None
branch_labels = ("tenant_rules",)
depends_on = ("core_0001",)


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("expires_at")
