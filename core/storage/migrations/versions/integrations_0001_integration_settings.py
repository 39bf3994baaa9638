"""integration settings and their version counter

Revision ID: integrations_0001
Revises:
Create Date: 2026-11-27 17:30:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import patchbay.core.storage.base

revision = "integrations_0001"
down_revision = None
branch_labels = ("integrations",)
depends_on = ("core_0001",)

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "integration_settings",
        sa.Column("scope", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=True),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("client_id", sa.Text(), nullable=True),
        sa.Column("client_secret", sa.Text(), nullable=True),
        sa.Column("client_secret_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("scopes", JSON, nullable=True),
        sa.Column("api_base_url", sa.Text(), nullable=True),
        sa.Column("webhook_secret", sa.Text(), nullable=True),
        sa.Column("webhook_secret_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("webhook_verify_token", sa.Text(), nullable=True),
        sa.Column("webhook_verify_token_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_integration_settings_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_integration_settings")),
        sa.UniqueConstraint("scope", "provider", name=op.f("uq_integration_settings_scope_provider")),
    )
    with op.batch_alter_table("integration_settings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_integration_settings_workspace_id"), ["workspace_id"], unique=False)
    versions = op.create_table(
        "integration_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_integration_versions")),
    )
    op.bulk_insert(versions, [{"id": 1, "version": 0}])


def downgrade() -> None:
    op.drop_table("integration_versions")
    with op.batch_alter_table("integration_settings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_integration_settings_workspace_id"))
    op.drop_table("integration_settings")
