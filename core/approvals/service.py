"""Approval of integration connects (spec 4.17).

The connections feature calls :func:`gate_connect` from its connect routes before making a
connection; when the workspace's policy requires approval for the provider (by name or by one of its
categories) and the caller is not an approver, a pending request is stored (the submitted
credentials encrypted) and its id returned instead of connecting. An approver's
:func:`approve` then makes the connection through
``patchbay.core.connections.service.connect_with_api_key``; :func:`deny` refuses it. Every decision
records who decided and when.

Who approves: a principal holding ``approvals.write`` that is either an organization-level
credential (an API key, a client_credentials token: no user membership) or a member user whose role
is in the policy's ``approver_roles`` (default ``["admin"]``) or whose id is in
``approver_user_ids``.

Only an approver (under the policy as it stands) changes the policy, so a manager can neither make
managers approvers nor turn the policy off. Importing existing tokens
(:func:`require_ungated_or_approver`) has no credentials an approver could later connect with, so
an import that the policy gates is refused (403) unless an approver makes it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.approvals.models import ApprovalPolicy, ApprovalRequest
from patchbay.core.connections import service as connections
from patchbay.core.errors import Conflict, Forbidden, Invalid, NotFound
from patchbay.core.plugins.registry import Registry
from patchbay.core.security.auth import Principal
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import ROLES, Membership

if TYPE_CHECKING:
    from patchbay.core.services import Services

APPROVING_TIMEOUT_SECONDS = 300


# ---------------------------------------------------------------------------------------------
# Policy
# ---------------------------------------------------------------------------------------------


async def get_policy(session: AsyncSession, workspace_id: str) -> ApprovalPolicy | None:
    return await session.scalar(select(ApprovalPolicy).where(ApprovalPolicy.workspace_id == workspace_id))


async def policy_of(services: Services, workspace_id: str) -> ApprovalPolicy | None:
    """The workspace's policy; None when it has never been set (the defaults apply)."""
    async with services.db.session(tenant=workspace_id) as session:
        return await get_policy(session, workspace_id)


async def change_policy(services: Services, workspace_id: str, changes: dict[str, Any], *, principal: Principal) -> ApprovalPolicy:
    """:func:`update_policy` in a transaction of its own."""
    async with services.db.transaction(tenant=workspace_id) as session:
        return await update_policy(session, workspace_id, changes, principal=principal)


async def update_policy(session: AsyncSession, workspace_id: str, changes: dict[str, Any], *, principal: Principal) -> ApprovalPolicy:
    """Apply ``changes`` (keys: enabled, providers, categories, approver_roles, approver_user_ids);
    ``Forbidden`` unless ``principal`` is an approver under the current policy, ``Invalid`` for a
    role that does not exist."""
    policy = await get_policy(session, workspace_id)
    if not await is_approver(session, policy, workspace_id, principal):
        raise Forbidden("Only an approver of this organization can change the approval policy")
    if policy is None:
        policy = ApprovalPolicy(workspace_id=workspace_id, enabled=False, providers=[], categories=[], approver_roles=["admin"], approver_user_ids=[])
        session.add(policy)
    for role in changes.get("approver_roles") or []:
        if role not in ROLES:
            raise Invalid(f"Validation failed: approverRoles: {role!r} is not one of {', '.join(ROLES)}")
    for key, value in changes.items():
        setattr(policy, key, value)
    policy.updated_by = principal.subject
    await session.flush()
    return policy


def _requires_approval(registry: Registry, policy: ApprovalPolicy, provider: str) -> bool:
    if provider in (policy.providers or []):
        return True
    definition = registry.provider(provider)
    categories = set(definition.all_categories) if definition is not None else set()
    return bool(categories & set(policy.categories or []))


async def is_approver(session: AsyncSession, policy: ApprovalPolicy | None, workspace_id: str, principal: Principal) -> bool:
    if not principal.can("approvals.write"):
        return False
    roles = policy.approver_roles if policy is not None else ["admin"]
    user_ids = policy.approver_user_ids if policy is not None else []
    if principal.kind != "access_token" or not principal.subject:
        return True
    if principal.subject in (user_ids or []):
        return True
    role = await session.scalar(select(Membership.role).where(Membership.workspace_id == workspace_id, Membership.user_id == principal.subject))
    if role is None:
        # not a member user: a client_credentials token of the organization
        return principal.subject == principal.client_id
    return role in (roles or [])


# ---------------------------------------------------------------------------------------------
# Gate
# ---------------------------------------------------------------------------------------------


async def _needs_approval(services: Services, session: AsyncSession, workspace_id: str, provider: str, principal: Principal) -> bool:
    policy = await get_policy(session, workspace_id)
    if policy is None or not policy.enabled or not _requires_approval(services.registry, policy, provider):
        return False
    return not await is_approver(session, policy, workspace_id, principal)


async def require_ungated_or_approver(services: Services, session: AsyncSession, *, workspace_id: str, provider: str, principal: Principal) -> None:
    """``Forbidden`` when the policy gates ``provider`` and ``principal`` is not an approver (token imports)."""
    if await _needs_approval(services, session, workspace_id, provider, principal):
        raise Forbidden(f"The approval policy gates {provider}: only an approver can import its connections")


async def gate_connect(
    services: Services, session: AsyncSession, *, workspace_id: str, provider: str, principal: Principal, payload: dict[str, Any] | None
) -> str | None:
    """The id of a new pending approval request when this connect needs approval, else None.

    :param payload: the connect body, ``{credentials: {...}, metadata?: {...}}`` for API-key
        connects; without ``credentials`` (an OAuth connect) approval lets the requester start the
        OAuth flow again: an approved OAuth request of the same requester and provider is consumed
        here and None returned.
    """
    if not await _needs_approval(services, session, workspace_id, provider, principal):
        return None
    payload = payload or {}
    credentials = payload.get("credentials")
    if not credentials:
        approved = await session.scalar(
            select(ApprovalRequest)
            .where(
                ApprovalRequest.workspace_id == workspace_id,
                ApprovalRequest.provider == provider,
                ApprovalRequest.kind == "oauth",
                ApprovalRequest.status == "approved",
                ApprovalRequest.requested_by == principal.subject,
            )
            .limit(1)
        )
        if approved is not None:
            approved.status = "completed"
            await session.flush()
            return None
    metadata = payload.get("metadata") if isinstance(payload.get("metadata"), dict) else {}
    request = ApprovalRequest(
        workspace_id=workspace_id,
        provider=provider,
        kind="api_key" if credentials else "oauth",
        status="pending",
        requested_by=principal.subject,
        requested_by_kind=principal.kind,
        credentials=services.secrets.encrypt(
            json.dumps({"credentials": credentials, "params": payload.get("params") or {}, "endUserId": payload.get("endUserId")})
        )
        if credentials
        else None,
        meta=metadata,
        reason=payload.get("reason") if isinstance(payload.get("reason"), str) else None,
    )
    session.add(request)
    await session.flush()
    return request.id


async def request_page(services: Services, *, workspace_id: str, status: str | None, page: int, limit: int) -> tuple[list[ApprovalRequest], int]:
    """A page of the workspace's requests (of ``status`` when given), newest first, and how many
    match."""
    query = select(ApprovalRequest)
    if status:
        query = query.where(ApprovalRequest.status == status)
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(query.subquery()))
        rows = await session.scalars(query.order_by(ApprovalRequest.created_at.desc(), ApprovalRequest.id).offset((page - 1) * limit).limit(limit))
        return list(rows), int(total or 0)


async def load_request(services: Services, *, workspace_id: str, request_id: str) -> ApprovalRequest:
    async with services.db.session(tenant=workspace_id) as session:
        return await get_request(session, request_id)


# ---------------------------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------------------------


async def get_request(session: AsyncSession, request_id: str) -> ApprovalRequest:
    """The request of the session's workspace; ``NotFound`` otherwise."""
    request = await session.get(ApprovalRequest, request_id)
    if request is None:
        raise NotFound("Approval request not found")
    return request


async def _load_for_decision(services: Services, workspace_id: str, request_id: str, principal: Principal) -> ApprovalRequest:
    async with services.db.transaction(tenant=workspace_id) as session:
        request = await get_request(session, request_id)
        if not await is_approver(session, await get_policy(session, workspace_id), workspace_id, principal):
            raise Forbidden("Only an approver of this organization can decide approval requests")
        stale = utcnow() - timedelta(seconds=APPROVING_TIMEOUT_SECONDS)  # a decision whose process died
        claimed = await session.execute(
            update(ApprovalRequest)
            .where(
                ApprovalRequest.id == request_id,
                or_(ApprovalRequest.status == "pending", and_(ApprovalRequest.status == "approving", ApprovalRequest.updated_at < stale)),
            )
            .values(status="approving", updated_at=utcnow())
        )
        if claimed.rowcount != 1:
            raise Conflict(f"Approval request is already {request.status}")
        return request


async def _finish(services: Services, workspace_id: str, request_id: str, principal: Principal, **values: Any) -> ApprovalRequest:
    async with services.db.transaction(tenant=workspace_id) as session:
        request = await session.get(ApprovalRequest, request_id)
        for key, value in values.items():
            setattr(request, key, value)
        if values.get("status") != "pending":
            request.decided_by = principal.subject
            request.decided_by_kind = principal.kind
            request.decided_at = utcnow()
            request.credentials = None
        await session.flush()
        return request


async def approve(services: Services, *, workspace_id: str, request_id: str, principal: Principal, note: str | None = None) -> ApprovalRequest:
    """Approve a pending request: an API-key request is connected now (through the connections
    service); on failure the request stays pending and the error is raised."""
    request = await _load_for_decision(services, workspace_id, request_id, principal)
    connection_id = None
    if request.kind == "api_key":
        try:
            stored = json.loads(services.secrets.decrypt(request.credentials or "null")) or {}
            connection = await connections.connect_with_api_key(
                services,
                workspace_id=workspace_id,
                provider_name=request.provider,
                credentials=stored.get("credentials") or {},
                metadata=dict(request.meta or {}),
                params=stored.get("params") or {},
                end_user_id=stored.get("endUserId"),
            )
            connection_id = connection.id
        except BaseException:
            await _finish(services, workspace_id, request_id, principal, status="pending")
            raise
    return await _finish(services, workspace_id, request_id, principal, status="approved", connection_id=connection_id, decision_note=note)


async def deny(services: Services, *, workspace_id: str, request_id: str, principal: Principal, note: str | None = None) -> ApprovalRequest:
    await _load_for_decision(services, workspace_id, request_id, principal)
    return await _finish(services, workspace_id, request_id, principal, status="denied", decision_note=note)
