"""The bodies the approval routes (``core.approvals.routes``) read and answer: the models that
validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from patchbay.core.approvals.models import ApprovalPolicy, ApprovalRequest
from patchbay.core.errors import Invalid
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.responses import page_of, response_model
from patchbay.core.timeutil import iso

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class UpdatePolicyDto:
    """Any of them; a field left out keeps its value. ``approverRoles`` are workspace roles."""

    enabled: bool | None = None
    providers: list[str] | None = None
    categories: list[str] | None = None
    approverRoles: list[str] | None = None
    approverUserIds: list[str] | None = None


@dataclass
class DecisionDto:
    """The approver's note, kept with the decision."""

    note: str | None = None


#: the policy's fields by their JSON name
POLICY_FIELDS = {
    "enabled": "enabled",
    "providers": "providers",
    "categories": "categories",
    "approverRoles": "approver_roles",
    "approverUserIds": "approver_user_ids",
}


async def read_policy_changes(request: web.Request) -> dict[str, Any]:
    """The fields the body sets, by attribute of :class:`ApprovalPolicy`; 400 naming an unknown
    field, a null one or one of the wrong type (a list that is not a JSON array is refused first, in
    the words the API has always used)."""
    body = await read_object(request)
    unknown = set(body) - set(POLICY_FIELDS)
    if unknown:
        raise Invalid(f"Validation failed: unknown field(s) {', '.join(sorted(unknown))}")
    for name, value in body.items():
        if name == "enabled" and not isinstance(value, bool):
            raise Invalid("Validation failed: enabled must be a boolean")
        if name != "enabled" and not isinstance(value, list):
            raise Invalid(f"Validation failed: {name} must be a list of strings")
    dto = structure(body, UpdatePolicyDto)
    return {attribute: getattr(dto, name) for name, attribute in POLICY_FIELDS.items() if name in body}


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class ApprovalPolicyOut:
    """Who must approve which providers' connects (by name or category); the defaults without a
    stored policy (``updatedAt`` null)."""

    enabled: bool
    providers: list[str]
    categories: list[str]
    approverRoles: list[str]
    approverUserIds: list[str]
    updatedAt: str | None
    updatedBy: str | None


@response_model
class ApprovalRequestOut:
    """A connect held for approval (never the submitted credentials)."""

    id: str
    provider: str
    kind: str
    status: str
    requestedBy: str | None
    requestedByKind: str | None
    metadata: dict[str, Any]
    reason: str | None
    decidedBy: str | None
    decidedByKind: str | None
    decidedAt: str | None
    decisionNote: str | None
    connectionId: str | None
    createdAt: str | None
    updatedAt: str | None


ApprovalRequestPage = page_of(ApprovalRequestOut)


def policy_json(policy: ApprovalPolicy | None) -> dict[str, Any]:
    if policy is None:
        return {"enabled": False, "providers": [], "categories": [], "approverRoles": ["admin"], "approverUserIds": [], "updatedAt": None, "updatedBy": None}
    return {
        "enabled": policy.enabled,
        "providers": list(policy.providers or []),
        "categories": list(policy.categories or []),
        "approverRoles": list(policy.approver_roles or []),
        "approverUserIds": list(policy.approver_user_ids or []),
        "updatedAt": iso(policy.updated_at),
        "updatedBy": policy.updated_by,
    }


def request_json(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "provider": request.provider,
        "kind": request.kind,
        "status": request.status,
        "requestedBy": request.requested_by,
        "requestedByKind": request.requested_by_kind,
        "metadata": dict(request.meta or {}),
        "reason": request.reason,
        "decidedBy": request.decided_by,
        "decidedByKind": request.decided_by_kind,
        "decidedAt": iso(request.decided_at),
        "decisionNote": request.decision_note,
        "connectionId": request.connection_id,
        "createdAt": iso(request.created_at),
        "updatedAt": iso(request.updated_at),
    }
