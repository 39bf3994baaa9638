"""Agents' authorizations (issue 27): what the consent page of an MCP client offers (the user's
workspaces, their connections), who the agent is (its origin, whether the operator vouched for it),
the grant the user's choice makes (``core.mcp.grants``), and the user's or the workspace admin's
list and revocation of those grants.

An agent's grant has one id in two places: the agent grant (``agent_grants``: workspace,
connections, read by ``/mcp`` on every call) and the identity provider's grant (``oidc_grants``: the
chain of refresh tokens). Revoking it here revokes both, so the next ``/mcp`` call and the next
refresh fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
from sqlalchemy import select

from patchbay.core.connections.models import ACTIVE_STATUSES, Connection
from patchbay.core.errors import Forbidden, NotFound
from patchbay.core.identity.clients import Client
from patchbay.core.identity.models import OidcClient
from patchbay.core.identity.server import revoke_grant as revoke_identity_grant
from patchbay.core.mcp import grants as agent_grants
from patchbay.core.security.permissions import permissions_for_roles
from patchbay.core.workspaces.service import memberships_of

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: what a member must be allowed to do in a workspace to give an agent its connections
GRANTING_PERMISSION = "actions.execute"


@attrs.frozen
class Choice:
    id: str
    label: str


def agent_origin(client: Client, redirect_uri: str) -> str:
    """Where the agent comes from, as the consent page shows it: its metadata document's host, else
    the host its browser goes back to."""
    return (urlsplit(client.metadata_url).hostname if client.metadata_url else urlsplit(redirect_uri).hostname) or ""


def vouched_for(services: Services, client: Client, redirect_uri: str) -> bool:
    """Whether the operator vouched for the agent: a client the operator made, or one listed in
    ``[identity] trusted_agents`` by client id, metadata document URL or host."""
    if not client.self_registered:
        return True
    trusted = set(services.settings.identity.trusted_agents)
    return bool(trusted & {client.client_id, client.public_id, agent_origin(client, redirect_uri)})


async def grantable_workspaces(services: Services, user_id: str) -> list[Choice]:
    """The workspaces whose connections the user may give an agent (those where their role can run actions)."""
    async with services.db.session() as session:
        memberships = await memberships_of(session, user_id)
    return [Choice(workspace.id, workspace.name) for workspace, role in memberships if GRANTING_PERMISSION in permissions_for_roles([role])]


async def workspace_connections(services: Services, workspace_id: str) -> list[Choice]:
    """The workspace's active connections, oldest first."""
    async with services.db.session(tenant=workspace_id) as session:
        rows = (await session.scalars(select(Connection).where(Connection.status.in_(ACTIVE_STATUSES)).order_by(Connection.created_at, Connection.id))).all()
    return [Choice(row.id, _connection_label(row)) for row in rows]


def _connection_label(row: Connection) -> str:
    meta = row.meta or {}
    name = next((meta[key] for key in ("name", "account_name", "accountName", "email", "workspace_name") if isinstance(meta.get(key), str)), None)
    return f"{row.provider} ({name})" if name else f"{row.provider} ({row.id[:8]})"


async def grant_to_agent(services: Services, *, user_id: str, client: Client, workspace_id: str, connection_ids: list[str]) -> agent_grants.Grant:
    """The grant of the user's choice on the consent page. :class:`Forbidden` for a workspace the
    user may not grant from; ``Invalid`` (from ``create_grant``) for a connection not of it."""
    if workspace_id not in {choice.id for choice in await grantable_workspaces(services, user_id)}:
        raise Forbidden("you cannot give an agent the connections of this workspace")
    return await agent_grants.create_grant(services, workspace_id=workspace_id, user_id=user_id, client_id=client.public_id, connection_ids=connection_ids)


# -- the user's grants ----------------------------------------------------------------------------


async def grants_of_user(services: Services, user_id: str) -> list[dict[str, Any]]:
    """The user's active agent grants, newest first, with the agent's name."""
    grants = await agent_grants.grants_of_user(services, user_id)
    names = await _client_names(services, {grant.client_id for grant in grants})
    return [grant_json(grant, names.get(grant.client_id)) for grant in grants]


async def _client_names(services: Services, public_ids: set[str]) -> dict[str, str]:
    if not public_ids:
        return {}
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(OidcClient.client_id, OidcClient.metadata_url, OidcClient.client_name).where(
                    OidcClient.client_id.in_(public_ids) | OidcClient.metadata_url.in_(public_ids)
                )
            )
        ).all()
    return {(row.metadata_url or row.client_id): row.client_name for row in rows}


def grant_json(grant: agent_grants.Grant, client_name: str | None) -> dict[str, Any]:
    return {
        "id": grant.id,
        "workspaceId": grant.workspace_id,
        "clientId": grant.client_id,
        "clientName": client_name,
        "connectionIds": list(grant.connection_ids),
        "tools": list(grant.tools) if grant.tools is not None else None,
        "createdAt": grant.created_at.isoformat(),
        "expiresAt": grant.expires_at.isoformat() if grant.expires_at else None,
    }


async def revoke_agent_grant(services: Services, grant_id: str, *, user_id: str | None = None, workspace_id: str | None = None) -> None:
    """Revoke a grant the user ``user_id`` gave, or one of the workspace ``workspace_id`` (its
    admin); :class:`NotFound` for any other. Its access tokens stop at the next ``/mcp`` call, its
    refresh tokens at once."""
    if user_id is not None:
        mine = {grant.id: grant for grant in await agent_grants.grants_of_user(services, user_id)}
        if grant_id not in mine:
            raise NotFound("no such grant")
        workspace_id = mine[grant_id].workspace_id
    if workspace_id is None:
        raise NotFound("no such grant")
    await agent_grants.revoke_grant(services, grant_id, workspace_id=workspace_id)
    async with services.db.transaction() as session:
        await revoke_identity_grant(session, grant_id)
