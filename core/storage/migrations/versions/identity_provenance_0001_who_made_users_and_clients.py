"""who made a user or a client: users.created_by_client_id, oidc_clients.self_registered (issue 22)

``created_by_client_id`` names the platform client that created a user through the platform API; a
client bound to an organization may add to it, and change, only its own users. Users made before
have none, so they are no client's. ``self_registered`` marks the clients anyone registered (RFC
7591), which the consent page shows as unverified. Existing clients cannot tell, so every existing
third-party client not bound to a workspace is taken as self-registered: at worst one of the
operator's third-party apps is shown as unverified, never the other way round.

Revision ID: identity_provenance_0001
Revises:
Create Date: 2026-11-27 07:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_provenance_0001"
down_revision = None
branch_labels = ("identity_provenance",)
depends_on = ("identity_trust_0001",)


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_by_client_id", sa.String(length=64), nullable=True))
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("self_registered", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute(sa.text("UPDATE oidc_clients SET self_registered = :yes WHERE trust = 'third_party' AND workspace_id IS NULL").bindparams(yes=True))


def downgrade() -> None:
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.drop_column("self_registered")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("created_by_client_id")
