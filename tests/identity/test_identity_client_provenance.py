"""Migration ``identity_provenance_0001``: clients registered before it cannot tell who made them, so
the unbound third-party ones are taken as self-registered (the consent page calls them
unverified) and the operator's trusted or workspace-bound ones are not."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.dialects import postgresql

from patchbay.core.identity.models import OidcClient
from patchbay.core.storage.base import UtcDateTime
from patchbay.core.storage.migrate import alembic_config, upgrade
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.service import create_workspace

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
#: oidc_clients as the previous revision knows it (the model has the new column)
OLD_CLIENTS = sa.table(
    "oidc_clients",
    *(
        sa.column(name)
        for name in (
            "client_id",
            "client_name",
            "application",
            "token_endpoint_auth_method",
            "scope",
            "require_pkce",
            "refresh_token_rotation",
            "access_token_ttl",
            "refresh_token_ttl",
            "workspace_id",
            "trust",
        )
    ),
    sa.column("redirect_uris", JSON),
    sa.column("grant_types", JSON),
    sa.column("created_at", UtcDateTime(timezone=True)),
    sa.column("updated_at", UtcDateTime(timezone=True)),
)


def old_client(client_id: str, trust: str, workspace_id: str | None = None) -> dict:
    return {
        "client_id": client_id,
        "client_name": client_id,
        "application": client_id,
        "token_endpoint_auth_method": "client_secret_post",
        "scope": "openid",
        "require_pkce": True,
        "refresh_token_rotation": False,
        "access_token_ttl": 3600,
        "refresh_token_ttl": 86400,
        "workspace_id": workspace_id,
        "trust": trust,
        "redirect_uris": ["https://a.example/cb"],
        "grant_types": ["authorization_code"],
        "created_at": utcnow(),
        "updated_at": utcnow(),
    }


@pytest.mark.both_databases
async def test_existing_unbound_third_party_clients_are_taken_as_self_registered(db):
    async with db.engine.begin() as connection:
        await connection.run_sync(lambda sync: command.downgrade(alembic_config(sync), "identity_provenance@base"))
    async with db.transaction() as session:
        workspace, _ = await create_workspace(session, name="Bound")
    async with db.engine.begin() as connection:
        await connection.execute(
            sa.insert(OLD_CLIENTS),
            [
                old_client("registered", "third_party"),
                old_client("operators", "first_party"),
                old_client("bound", "third_party", workspace.id),
                old_client("backend", "platform"),
            ],
        )
    await upgrade(db)
    async with db.session() as session:
        marked = dict((await session.execute(sa.select(OidcClient.client_id, OidcClient.self_registered))).all())
    assert marked == {"registered": True, "operators": False, "bound": False, "backend": False}
