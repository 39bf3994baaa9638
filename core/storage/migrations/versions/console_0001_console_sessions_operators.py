"""console sessions; users.is_operator

Revision ID: console_0001
Revises:
Create Date: 2026-11-27 13:15:00
"""

import sqlalchemy as sa
from alembic import op

import patchbay.core.storage.base

revision = "console_0001"
down_revision = None
branch_labels = ("console",)
depends_on = ("core_0001", "identity_0001")


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("csrf_secret", sa.String(length=64), nullable=False),
        sa.Column("id_token", sa.Text(), nullable=True),
        sa.Column("grant_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("ended_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_console_sessions_user_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["grant_id"], ["oidc_grants.id"], name=op.f("fk_console_sessions_grant_id_oidc_grants"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_console_sessions_token_digest")),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_console_sessions_grant_id"), ["grant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_console_sessions_user_id"), ["user_id"], unique=False)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("is_operator", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("is_operator")
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_console_sessions_user_id"))
        batch_op.drop_index(batch_op.f("ix_console_sessions_grant_id"))
    op.drop_table("console_sessions")
