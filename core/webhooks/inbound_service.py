"""Provider webhooks in (4.5, contract section 7): the handshake, and the verification and storage
of an inbound event (``core.webhooks.routes_inbound`` is the HTTP side).

A verified body is committed (group commit, see ``ingest``) before the caller answers 200; routing,
lead extraction and forwarding happen afterwards in the job queue.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from patchbay.core.awaitables import maybe_await
from patchbay.core.errors import Forbidden, Invalid, NotFound, Unauthenticated, Unavailable
from patchbay.core.integrations import service as integrations
from patchbay.core.plugins.registry import ProviderSecrets
from patchbay.core.services import Services
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks.protocol import InboundRequest, WebhookHandler, WebhookReply


@attrs.frozen
class Received:
    """What :func:`receive` did: stored the event as ``event_id``, or (``event_id`` None) stored
    nothing because the provider expects ``immediate`` as the answer."""

    event_id: str | None
    immediate: Any = None
    reply: WebhookReply | None = None  # a handshake's answer (nothing stored)


def webhook_handler(services: Services, provider: str) -> tuple[WebhookHandler, ProviderSecrets]:
    """The provider's webhook handler and its secrets; NotFound for an unknown provider, and
    NotFound saying so for a provider that receives no webhooks (its pack registers no handler)."""
    registry = services.registry
    handler = registry.get("webhooks", provider)
    if registry.provider(provider) is None:
        raise NotFound(f"Provider not found: {provider}")
    if handler is None:
        raise NotFound(f"Provider {provider} receives no webhooks: its pack registers no webhook handler, so nothing is accepted at /webhook/{provider}")
    return handler, registry.provider_secrets(provider)


async def handshake(services: Services, provider: str, query: Any) -> str:
    """The answer to a provider's subscription handshake (``hub.challenge``); Forbidden when the
    verify token does not match."""
    handler, secrets = webhook_handler(services, provider)
    secrets = await integrations.webhook_secrets(services, provider, secrets)
    answer = await maybe_await(handler.handshake(query, secrets.webhook_verify_token))
    if answer is None:
        raise Forbidden("Verification token mismatch")
    return str(answer)


async def receive(services: Services, provider: str, inbound: InboundRequest, *, connection_hint: str | None) -> Received:
    """Verify ``inbound`` and store it (with the type :meth:`~.WebhookHandler.received_type`
    reads), or, for a handshake (``challenge``) or a request the provider expects answered at once
    (Slack's ``url_verification``), store nothing. Unauthenticated without a valid
    signature, Invalid for a body that is not UTF-8, Unavailable when it could not be stored."""
    handler, secrets = webhook_handler(services, provider)
    secrets = await integrations.webhook_secrets(services, provider, secrets)
    reply = await maybe_await(handler.challenge(inbound, secrets.webhook_secret))
    if reply is not None:
        return Received(None, reply=reply)
    if not secrets.webhook_secret:
        raise Unauthenticated(
            f"Unauthorized: no webhook secret is configured for {provider}, so no event can be verified; "
            f"the operator sets `webhook_secret` in `[providers.{provider}]` of the settings file"
        )
    if not await maybe_await(handler.verify(inbound, secrets.webhook_secret)):
        raise Unauthenticated(f"Unauthorized: the request's signature is missing or does not match the webhook secret configured for {provider}")
    immediate = await maybe_await(handler.immediate_response(inbound))
    if immediate is not None:
        return Received(None, immediate)
    try:
        text = inbound.body.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("The body must be UTF-8 text") from None
    now = utcnow()
    event_id = new_id()
    row = {
        "id": event_id,
        "workspace_id": None,
        "provider": provider,
        "status": "RECEIVED",
        "body": text,
        "body_hash": hashlib.sha256(provider.encode() + b"\n" + inbound.body).hexdigest(),
        "connection_hint": connection_hint,
        "event_type": await maybe_await(handler.received_type(inbound)),
        "created_at": now,
        "updated_at": now,
    }
    try:
        await services.webhook_ingest.submit(row)
    except Exception:
        raise Unavailable("The event could not be stored; retry later") from None
    return Received(event_id)
