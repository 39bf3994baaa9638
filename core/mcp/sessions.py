"""Server-to-server agent sessions (``POST /connect/v1/agent-sessions``): a customer's backend,
holding an API key, gets a short-lived MCP token scoped to some of its end user's connections and
optionally to a list of tools, for an agent it runs itself. The grant has no user
(``user_id`` None) and names the end user."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from patchbay.core.errors import Invalid
from patchbay.core.mcp.access import mcp_resource, mint_access_token
from patchbay.core.mcp.grants import AGENT_SESSION_CLIENT, create_grant
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.mcp.api_models import CreateAgentSessionDto
    from patchbay.core.services import Services

MAX_CONNECTIONS = 100


async def create_agent_session(services: Services, workspace_id: str, body: CreateAgentSessionDto) -> dict[str, Any]:
    """A grant and its token: ``{token, mcpUrl, expiresAt, grantId}``; :class:`Invalid` names the field."""
    settings = services.settings.mcp
    end_user = (body.endUserId or "").strip()
    if not end_user or len(end_user) > 200:
        raise Invalid("Validation failed: endUserId is required (at most 200 characters)")
    if not body.connectionIds or len(body.connectionIds) > MAX_CONNECTIONS:
        raise Invalid(f"Validation failed: connectionIds must list 1 to {MAX_CONNECTIONS} connections")
    ttl = settings.agent_session_ttl_seconds if body.expiresInSeconds is None else body.expiresInSeconds
    if not 60 <= ttl <= settings.max_agent_session_ttl_seconds:
        raise Invalid(f"Validation failed: expiresInSeconds must be 60 to {settings.max_agent_session_ttl_seconds}")
    expires_at = utcnow() + timedelta(seconds=ttl)
    try:
        grant = await create_grant(
            services,
            workspace_id=workspace_id,
            user_id=None,
            client_id=AGENT_SESSION_CLIENT,
            connection_ids=body.connectionIds,
            end_user_id=end_user,
            tools=body.tools,
            expires_at=expires_at,
        )
    except Invalid as error:
        raise Invalid(f"Validation failed: {error.message}") from None
    token = await mint_access_token(services, grant, lifetime=ttl)
    return {"token": token, "mcpUrl": mcp_resource(services), "expiresAt": iso(expires_at), "grantId": grant.id}
