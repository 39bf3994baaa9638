"""Helpers for tests of patchbay and of provider packs: an authenticated workspace, an access token."""

from __future__ import annotations

import time
from typing import Any

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.models import OidcClient
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.workspaces.service import create_workspace


async def create_workspace_with_key(app, *, name: str = "Acme", plan: str = "free", permissions=None) -> dict[str, Any]:
    """A workspace and an API key for it: ``{"workspace_id", "api_key", "headers"}``."""
    async with app[SERVICES].db.transaction() as session:
        workspace, _ = await create_workspace(session, name=name, plan=plan)
        issued = await create_api_key(session, app[SERVICES].secrets, workspace_id=workspace.id, name="test", permissions=permissions)
    return {"workspace_id": workspace.id, "api_key": issued.key, "headers": {"x-api-key": issued.key}}


TESTING_CLIENT_ID = "patchbay-testing"


async def sign_access_token(app, claims: dict[str, Any], *, lifetime: int = 3600) -> str:
    """An access token of this service's identity provider, as the connect API accepts it: issued
    to a first-party client (``claims["client_id"]``, default ``patchbay-testing``, created here)."""
    client_id = claims.get("client_id") or TESTING_CLIENT_ID
    async with app[SERVICES].db.transaction() as session:
        if await session.get(OidcClient, client_id) is None:
            session.add(OidcClient(client_id=client_id, client_name=client_id, application=client_id, token_endpoint_auth_method="none",
                                   scope="openid", trust="first_party"))  # fmt: skip
    now = int(time.time())
    body = {"iss": app[SERVICES].settings.resolved_issuer, "iat": now, "exp": now + lifetime, "token_type": "access_token", "client_id": client_id, **claims}
    return await app[SERVICES].signing_keys.sign(body)
