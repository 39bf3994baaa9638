"""Data deletion: a provider's data deletion callback (registered by its pack with
``register_deletion_callbacks``: the ``meta`` pack reads Meta's ``signed_request``) and a signed-in
user's own request, both carried out by the ``compliance.delete_user_data`` job.

What is deleted comes from *erasers*: ``async eraser(session, request) -> int`` (rows removed), each
registered under a name by the feature owning the data, in its ``install(services)``::

    from patchbay.core.compliance.service import register_eraser

    register_eraser(services, "leads", erase_leads)

``request`` is the :class:`~patchbay.core.compliance.models.DeletionRequest` (``source`` the
callback's, e.g. ``meta`` with ``subject`` the app-scoped Meta user id, or ``user`` with ``subject``
our user id). The built-in ``users`` eraser deletes the user (found directly, or for a callback
through a federated identity of the identity providers a plugin registers for its source with
``register_deletion_identities``; the ``meta`` pack registers ``facebook`` and ``meta``), which
cascades to memberships, grants, tokens, consents and join requests, and the invites sent to the
user's email. All erasers
run in one transaction; the job retries on failure and marks the request ``failed`` on the last
attempt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.compliance.callbacks import DeletionCallbackError, DeletionContext
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.jobs.queue import JobContext
from patchbay.core.plugins.registry import Registry
from patchbay.core.security.secrets import random_identifier
from patchbay.core.storage.base import Base
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Invite

if TYPE_CHECKING:
    from patchbay.core.services import Services

DELETE_JOB = "compliance.delete_user_data"

Eraser = Callable[[AsyncSession, DeletionRequest], Awaitable[int]]


def install(services: Services) -> None:
    """The deletion job, and the built-in ``users`` eraser."""
    register_eraser(services, "users", users_eraser(services.registry.objects("deletion_identities")))
    services.jobs.register(DELETE_JOB, run_deletion, max_attempts=5)


async def deletion_by_code(services: Services, code: str) -> DeletionRequest:
    """The deletion request of confirmation ``code``; NotFound when there is none."""
    async with services.db.session() as session:
        deletion = await session.scalar(select(DeletionRequest).where(DeletionRequest.confirmation_code == code))
    if deletion is None:
        raise NotFound("Deletion request not found")
    return deletion


def callback_subject(registry: Registry, compliance: Any, body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The ``(source, subject)`` named by the provider data deletion callback ``body`` carries
    (``register_deletion_callbacks``: the first callback, by source, whose field is set), or None
    when it carries none; :class:`Invalid` when that callback refuses it."""
    for source, callback in sorted(registry.objects("deletion_callbacks").items()):
        value = body.get(callback.field)
        if value is not None and not isinstance(value, str):
            raise Invalid(f"Validation failed: {callback.field} must be a string")
        if not value:
            continue
        try:
            subject = callback.subject(value, DeletionContext(config=registry.plugin_settings(source), compliance=compliance))
        except DeletionCallbackError as error:
            raise Invalid(str(error)) from None
        return source, str(subject)
    return None


def no_requester(registry: Registry, body: Mapping[str, Any]) -> Invalid:
    """The refusal of a request that is neither a callback nor a signed-in user's: it names the
    callback fields installed packs read, and the body's fields that no installed pack reads (a
    callback whose pack is disabled or missing)."""
    fields = sorted({callback.field for callback in registry.objects("deletion_callbacks").values()})
    wanted = " or ".join([*fields, "a signed-in user's access token"])
    message = f"Validation failed: {wanted} is required"
    unread = sorted(set(body) - set(fields))
    if unread:
        message += f"; no installed provider pack reads {', '.join(unread)} (its pack is missing or disabled)"
    return Invalid(message)


def register_eraser(services: Services, name: str, eraser: Eraser) -> None:
    if name in services.erasers:
        raise ValueError(f"data eraser {name!r} is already registered")
    services.erasers[name] = eraser


async def request_deletion(services: Services, *, source: str, subject: str) -> DeletionRequest:
    """Record a deletion request and enqueue its job, in one transaction."""
    async with services.db.transaction() as session:
        request = DeletionRequest(confirmation_code=random_identifier(16), source=source, subject=str(subject), status="pending", result={})
        session.add(request)
        await session.flush()
        services.jobs.enqueue(session, DELETE_JOB, {"request_id": request.id})
    return request


def users_eraser(identity_providers: Mapping[str, tuple[str, ...]]) -> Eraser:
    """The built-in eraser: the user and what cascades from it, and invites to the user's email.
    ``identity_providers`` maps a request's source to the identity providers whose federated
    identity its subject is (``register_deletion_identities``)."""

    async def erase_users(session: AsyncSession, request: DeletionRequest) -> int:
        if request.source == "user":
            return await _erase(session, [request.subject])
        identities = Base.metadata.tables.get("oidc_federated_identities")
        providers = identity_providers.get(request.source, ())
        if identities is None or not providers:
            return 0
        query = select(identities.c.user_id).where(identities.c.provider.in_(providers), identities.c.subject == request.subject)
        return await _erase(session, list((await session.execute(query)).scalars()))

    return erase_users


async def _erase(session: AsyncSession, user_ids: list[str]) -> int:
    if not user_ids:
        return 0
    emails = list((await session.execute(select(User.email).where(User.id.in_(user_ids)))).scalars())
    removed = 0
    if emails:
        removed += (await session.execute(delete(Invite).where(Invite.email.in_([e.lower() for e in emails])))).rowcount or 0
    removed += (await session.execute(delete(User).where(User.id.in_(user_ids)))).rowcount or 0
    return removed


async def run_deletion(ctx: JobContext) -> None:
    """Job: carry out a deletion request once (a completed request is left alone)."""
    services = ctx.services
    try:
        async with services.db.transaction() as session:
            request = await session.get(DeletionRequest, ctx.payload["request_id"])
            if request is None or request.status == "completed":
                return
            result = {}
            for name, eraser in sorted(services.erasers.items()):
                result[name] = int(await eraser(session, request))
            request.result = result
            request.status = "completed"
            request.completed_at = utcnow()
            request.error = None
    except Exception as error:
        if ctx.is_last_attempt:
            async with services.db.transaction() as session:
                request = await session.get(DeletionRequest, ctx.payload["request_id"])
                if request is not None:
                    request.status = "failed"
                    request.error = f"{type(error).__name__}: {error}"
        raise
