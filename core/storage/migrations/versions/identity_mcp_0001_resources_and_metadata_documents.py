"""agents' authorization (issue 27): RFC 8707 resources on codes and grants, clients known by a
Client ID Metadata Document

Revision ID: identity_mcp_0001
Revises:
Create Date: 2026-11-27 13:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_mcp_0001"
down_revision = None
branch_labels = ("identity_mcp",)
depends_on = ("identity_trust_0001",)


def upgrade() -> None:
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("metadata_url", sa.String(length=2048), nullable=True))
    with op.batch_alter_table("oidc_authorization_codes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource", sa.String(length=2048), nullable=True))
    with op.batch_alter_table("oidc_grants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource", sa.String(length=2048), nullable=True))


def downgrade() -> None:
    for table, column in (("oidc_grants", "resource"), ("oidc_authorization_codes", "resource"), ("oidc_clients", "metadata_url")):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column(column)
