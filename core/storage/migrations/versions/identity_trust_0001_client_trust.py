"""client trust: third_party | first_party | platform (issue 11)

Existing clients become third-party, except those bound to a workspace: registration never binds
one, so a bound client was created by the operator (``patchbay clients create --workspace``) and
keeps its platform access.

Revision ID: identity_trust_0001
Revises:
Create Date: 2026-11-23 13:55:00
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_trust_0001"
down_revision = None
branch_labels = ("identity_trust",)
depends_on = ("identity_0001",)


def upgrade() -> None:
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trust", sa.String(length=20), server_default="third_party", nullable=False))
    op.execute("UPDATE oidc_clients SET trust = 'platform' WHERE workspace_id IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.drop_column("trust")
