"""Data deletion: Meta's data deletion callback (a ``signed_request``) and a signed-in user's own
request, both carried out by the ``compliance.delete_user_data`` job.

What is deleted comes from *erasers*: ``async eraser(session, request) -> int`` (rows removed), each
registered under a name by the feature owning the data, in its ``setup(app)``::

    from patchbay.core.compliance.service import register_eraser

    register_eraser(app, "leads", erase_leads)

``request`` is the :class:`~patchbay.core.compliance.models.DeletionRequest` (``source`` ``meta``
with ``subject`` the app-scoped Meta user id, or ``user`` with ``subject`` our user id). The
built-in ``users`` eraser deletes the user (found directly, or for Meta through a federated identity
of the identity providers a plugin registers for the source with ``register_deletion_identities``;
the ``meta`` pack registers ``facebook`` and ``meta``), which cascades to memberships,
grants, tokens, consents and join requests, and the invites sent to the user's email. All erasers
run in one transaction; the job retries on failure and marks the request ``failed`` on the last
attempt.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.appkeys import DB, ERASERS, JOBS
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.jobs.queue import JobContext
from patchbay.core.security.secrets import random_token
from patchbay.core.storage.base import Base
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Invite

DELETE_JOB = "compliance.delete_user_data"

Eraser = Callable[[AsyncSession, DeletionRequest], Awaitable[int]]


class SignedRequestError(ValueError):
    pass


def _b64url(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def parse_signed_request(signed_request: str, app_secret: str) -> dict[str, Any]:
    """Verify Meta's ``signed_request`` (``<base64url signature>.<base64url JSON>``, the signature
    an HMAC-SHA256 of the second part under the app secret) and answer its JSON."""
    encoded_signature, _, encoded_payload = signed_request.partition(".")
    if not encoded_signature or not encoded_payload:
        raise SignedRequestError("Malformed signed_request")
    try:
        signature = _b64url(encoded_signature)
        data = json.loads(_b64url(encoded_payload))
    except (ValueError, UnicodeDecodeError):
        raise SignedRequestError("Malformed signed_request") from None
    if not isinstance(data, dict) or str(data.get("algorithm", "")).upper() != "HMAC-SHA256":
        raise SignedRequestError("Unsupported signed_request algorithm")
    expected = hmac.new(app_secret.encode(), encoded_payload.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise SignedRequestError("Invalid signed_request signature")
    if not data.get("user_id"):
        raise SignedRequestError("signed_request has no user_id")
    return data


def register_eraser(app: web.Application, name: str, eraser: Eraser) -> None:
    erasers = app.setdefault(ERASERS, {})
    if name in erasers:
        raise ValueError(f"data eraser {name!r} is already registered")
    erasers[name] = eraser


async def request_deletion(app: web.Application, session: AsyncSession, *, source: str, subject: str) -> DeletionRequest:
    """Record a deletion request and enqueue its job in the caller's transaction."""
    request = DeletionRequest(confirmation_code=random_token(12), source=source, subject=str(subject), status="pending", result={})
    session.add(request)
    await session.flush()
    app[JOBS].enqueue(session, DELETE_JOB, {"request_id": request.id})
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
    app = ctx.app
    try:
        async with app[DB].transaction() as session:
            request = await session.get(DeletionRequest, ctx.payload["request_id"])
            if request is None or request.status == "completed":
                return
            result = {}
            for name, eraser in sorted(app.get(ERASERS, {}).items()):
                result[name] = int(await eraser(session, request))
            request.result = result
            request.status = "completed"
            request.completed_at = utcnow()
            request.error = None
    except Exception as error:
        if ctx.is_last_attempt:
            async with app[DB].transaction() as session:
                request = await session.get(DeletionRequest, ctx.payload["request_id"])
                if request is not None:
                    request.status = "failed"
                    request.error = f"{type(error).__name__}: {error}"
        raise
