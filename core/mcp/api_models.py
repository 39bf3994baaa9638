"""The bodies the agent API (``core.mcp.routes``) reads and answers: the models that validate and
serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass

from patchbay.core.http.responses import response_model


@dataclass
class CreateAgentSessionDto:
    """``endUserId`` and ``connectionIds`` (connections of this workspace) are required; ``tools``
    keeps only the named tools (``hubspot__create_contact`` or ``hubspot.create_contact``);
    ``expiresInSeconds`` is bounded by ``[mcp] max_agent_session_ttl_seconds``."""

    endUserId: str | None = None
    connectionIds: list[str] | None = None
    tools: list[str] | None = None
    expiresInSeconds: int | None = None


@dataclass
class AgentPolicyDto:
    """``approvalTools``: the tool names or action ids whose calls wait for an approver."""

    approvalTools: list[str] | None = None


@response_model
class CreatedAgentSession:
    """The token (shown once) for ``Authorization: Bearer`` at ``mcpUrl``, until ``expiresAt``."""

    token: str
    mcpUrl: str
    expiresAt: str
    grantId: str


@response_model
class AgentPolicyOut:
    approvalTools: list[str]
