"""``/mcp`` (the MCP server, Streamable HTTP) and the agent API of the connect API:
``POST /connect/v1/agent-sessions``, ``DELETE /connect/v1/agent-sessions/{grantId}`` and
``GET|PUT /connect/v1/agents/policy`` (the tools whose calls need approval)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_body
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import EMPTY, Media, reply, returns
from patchbay.core.mcp import approvals, sessions
from patchbay.core.mcp.access import MCP_PATH, authenticate
from patchbay.core.mcp.api_models import AgentPolicyDto, AgentPolicyOut, CreateAgentSessionDto, CreatedAgentSession
from patchbay.core.mcp.grants import revoke_grant
from patchbay.core.mcp.http import serve_asgi
from patchbay.core.mcp.service import ACCESS_SCOPE_KEY
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@returns(Media("text/event-stream"), description="The MCP Streamable HTTP transport's answer: JSON-RPC messages as server-sent events")
async def mcp_endpoint(request: web.Request) -> web.StreamResponse:
    """The MCP server: an access token for this resource is required (401 with a
    ``WWW-Authenticate`` challenge naming the protected resource metadata otherwise)."""
    services = request.app[SERVICES]
    access = await authenticate(services, request.headers.get("Authorization"))
    if request.method == "GET":
        # a stateless server has no stream of its own to offer; the transport allows a 405 here
        raise ApiError(405, "Method Not Allowed: this MCP server answers on the POST's stream", headers={"Allow": "POST"})
    return await serve_asgi(request, services.mcp.manager.handle_request, {ACCESS_SCOPE_KEY: access})


@routes.post("/connect/v1/agent-sessions")
@accepts(CreateAgentSessionDto)
@returns(CreatedAgentSession, status=201, description="Created")
@requires("connections.write")
async def create_agent_session(request: web.Request) -> web.Response:
    """A short-lived MCP token for an agent your backend runs: ``{endUserId, connectionIds, tools?,
    expiresInSeconds?}``; answers 201 with ``token`` (shown once), ``mcpUrl`` and ``expiresAt``."""
    principal = principal_of(request)
    body = await read_body(request, CreateAgentSessionDto)
    return reply(request, await sessions.create_agent_session(request.app[SERVICES], principal.workspace_id, body), status=201)


@routes.delete("/connect/v1/agent-sessions/{grantId}")
@returns(EMPTY, status=204, description="Revoked: no body")
@requires("connections.write")
async def revoke_agent_session(request: web.Request) -> web.Response:
    """End an agent session (or any agent grant of the workspace): its token stops working on the
    next request."""
    await revoke_grant(request.app[SERVICES], request.match_info["grantId"], workspace_id=principal_of(request).workspace_id)
    return web.Response(status=204)


@routes.get("/connect/v1/agents/policy")
@returns(AgentPolicyOut)
@requires("approvals.view")
async def get_agent_policy(request: web.Request) -> web.Response:
    """The tools whose calls by agents wait for an approver."""
    policy = await approvals.policy_of(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, approvals.policy_json(policy))


@routes.put("/connect/v1/agents/policy")
@accepts(AgentPolicyDto)
@returns(AgentPolicyOut)
@requires("approvals.write")
async def put_agent_policy(request: web.Request) -> web.Response:
    """Set the tools (names such as ``hubspot__create_contact``, or action ids such as
    ``hubspot.create_contact``) whose calls by agents wait for an approver; an approver answers at
    ``POST /connect/v1/approvals/{id}/approve`` or ``/deny``."""
    body = await read_body(request, AgentPolicyDto)
    policy = await approvals.set_policy(request.app[SERVICES], principal_of(request).workspace_id, approval_tools=body.approvalTools or [])
    return reply(request, approvals.policy_json(policy))


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, MCP_PATH, mcp_endpoint)
