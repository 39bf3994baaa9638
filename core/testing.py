"""Helpers for tests of patchbay and of provider packs: an authenticated workspace, an access token."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.models import OidcClient
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.services import Services
from patchbay.core.users.models import User
from patchbay.core.workspaces.service import add_member, create_workspace, is_member


def services_of(target: Services | web.Application) -> Services:
    """The services of a test's app, or the services themselves (a test of services alone)."""
    return target[SERVICES] if isinstance(target, web.Application) else target


async def create_workspace_with_key(app: Services | web.Application, *, name: str = "Acme", plan: str = "free", permissions=None) -> dict[str, Any]:
    """A workspace and an API key for it: ``{"workspace_id", "api_key", "headers"}``; ``app`` is the
    test's app or its services."""
    services = services_of(app)
    async with services.db.transaction() as session:
        workspace, _ = await create_workspace(session, name=name, plan=plan)
        issued = await create_api_key(session, services.secrets, workspace_id=workspace.id, name="test", permissions=permissions)
    return {"workspace_id": workspace.id, "api_key": issued.key, "headers": {"x-api-key": issued.key}}


TESTING_CLIENT_ID = "patchbay-testing"


async def sign_access_token(app: Services | web.Application, claims: dict[str, Any], *, lifetime: int = 3600) -> str:
    """An access token of this service's identity provider, as the connect API accepts it: issued
    to a first-party client (``claims["client_id"]``, default ``patchbay-testing``, created here).
    A user (``sub``) that ``organization_id`` names is made a member of it (an admin, the token's
    ``permissions`` bounding what it may do) unless they are one already, as the token endpoint
    only issues such tokens to members."""
    client_id = claims.get("client_id") or TESTING_CLIENT_ID
    services = services_of(app)
    async with services.db.transaction() as session:
        if await session.get(OidcClient, client_id) is None:
            session.add(
                OidcClient(
                    client_id=client_id, client_name=client_id, application=client_id, token_endpoint_auth_method="none", scope="openid", trust="first_party"
                )
            )
        workspace_id, user_id = claims.get("organization_id"), claims.get("sub")
        if workspace_id and user_id and user_id != client_id and not await is_member(session, workspace_id, user_id):
            if await session.get(User, user_id) is None:
                session.add(User(id=user_id, email=f"{user_id}@testing.invalid"))
                await session.flush()
            await add_member(session, workspace_id=workspace_id, user_id=user_id, role="admin")
    now = int(time.time())
    body = {"iss": services.settings.resolved_issuer, "iat": now, "exp": now + lifetime, "token_type": "access_token", "client_id": client_id, **claims}
    return await services.signing_keys.sign(body)
