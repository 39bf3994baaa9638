"""server-side sign-in sessions; the session an authorization code is issued in

Revision ID: sessions_0001
Revises:
Create Date: 2026-11-23 13:40:00
"""

import sqlalchemy as sa
from alembic import op

import patchbay.core.storage.base

revision = "sessions_0001"
down_revision = None
branch_labels = ("sessions",)
depends_on = ("core_0001", "identity_0001")


def upgrade() -> None:
    op.create_table(
        "user_sessions",
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("auth_time", sa.Integer(), nullable=False),
        sa.Column("created_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("ended_at", patchbay.core.storage.base.UtcDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_user_sessions_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_sessions")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_user_sessions_token_digest")),
    )
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_sessions_user_id"), ["user_id"], unique=False)
    with op.batch_alter_table("oidc_authorization_codes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_id", sa.String(length=36), nullable=True))
        batch_op.create_index(batch_op.f("ix_oidc_authorization_codes_session_id"), ["session_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("oidc_authorization_codes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oidc_authorization_codes_session_id"))
        batch_op.drop_column("session_id")
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_sessions_user_id"))
    op.drop_table("user_sessions")
