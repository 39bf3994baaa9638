"""What the agents' authorization tests share (tests/identity/test_identity_mcp_*.py): connections to
grant, the MCP resource, and an agent's walk through authorize, login and the agent consent page
over HTTP with the aiohttp test client (``tests/identity/conftest.py``'s :class:`Idp`)."""

from __future__ import annotations

import html
import re
from typing import Any

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.mcp.access import mcp_resource

AGENT_SCOPE = "mcp offline_access"


def resource_of(idp) -> str:
    return mcp_resource(idp.app[SERVICES])


async def add_connection(app, workspace_id: str, provider: str = "acme", **meta: Any) -> str:
    """An active connection of ``workspace_id`` (its credentials are never used here)."""
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        row = Connection(provider=provider, credentials="unused", status="connected", meta=meta)
        session.add(row)
        await session.flush()
        return row.id


def checkboxes(page: str) -> list[str]:
    return [html.unescape(value) for value in re.findall(r'<input type="checkbox" name="connection" value="([^"]*)"', page)]


async def agent_code(
    idp, client: dict[str, Any], *, connections: list[str] | None = None, workspace: str | None = None, **params: Any
) -> tuple[dict[str, str], str]:
    """Walk authorize -> login -> agent consent (allowing ``connections``, all offered ones by
    default) for the MCP resource; the redirect's query and the PKCE verifier."""
    verifier, challenge = idp.pkce_pair()
    query = {"resource": resource_of(idp), "scope": AGENT_SCOPE, "code_challenge": challenge, "code_challenge_method": "S256", **params}
    response = await idp.authorize(client, **query)
    location = response.headers["Location"]
    if "/api/v1/oidc/login" in location:
        response = await idp.login(location)
        location = response.headers["Location"]
    if "/api/v1/oidc/consent" in location:
        response = await consent(idp, location, connections=connections, workspace=workspace)
        location = response.headers["Location"]
    return idp.query_of(location), verifier


async def consent(idp, location: str, *, connections: list[str] | None = None, workspace: str | None = None, decision: str = "allow"):
    """Answer the agent consent page at ``location`` (for ``workspace`` when given)."""
    if workspace:
        location += "&workspace=" + workspace
    page = await idp.http.get(location)
    assert page.status == 200, await page.text()
    text = await page.text()
    fields = idp.form_fields(text)
    chosen = checkboxes(text) if connections is None else connections
    data = [*fields.items(), ("decision", decision), *(("connection", connection) for connection in chosen)]
    return await idp.http.post("/api/v1/oidc/consent", data=data, allow_redirects=False)


async def agent_tokens(idp, client: dict[str, Any], **params: Any) -> dict[str, Any]:
    """An agent's tokens for the MCP resource (the code exchanged with ``resource``)."""
    answer, verifier = await agent_code(idp, client, **params)
    assert "code" in answer, answer
    response = await idp.token(
        client, grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier, resource=resource_of(idp)
    )
    assert response.status == 200, await response.text()
    return await response.json()


async def claims_of(idp, token: str) -> dict[str, Any]:
    return await idp.app[SERVICES].signing_keys.verify(token)
