"""What a provider pack registers with ``register_webhooks``: a :class:`WebhookHandler` per
provider name, and the small value types its methods exchange with the core.

The core calls the handler's methods; each may return an awaitable (the core awaits it). Only
``verify`` and ``events`` are required; the defaults of the others say what happens without them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from patchbay.core.awaitables import maybe_await


class InboundRequest:
    """The inbound HTTP request as a handler sees it: ``method``, ``url`` (the deployment's public
    URL of the request: the ``base_url`` setting followed by the path and query as sent, never the
    caller's Host header; what a provider that signs the URL signed), ``headers``, ``query`` and
    ``body`` (the raw bytes). ``url`` may be given as a callable; it is then built on first use
    (most schemes never need it)."""

    __slots__ = ("method", "_url", "headers", "query", "body")

    def __init__(self, *, method: str, url: str | Callable[[], str], headers: Mapping[str, str], query: Mapping[str, str], body: bytes) -> None:
        self.method, self._url, self.headers, self.query, self.body = method, url, headers, query, body

    @property
    def url(self) -> str:
        if callable(self._url):
            self._url = self._url()
        return self._url


@attrs.frozen(kw_only=True)
class InboundEvent:
    """One provider event carried by a webhook body. ``external_id`` is the provider's id of the
    event or of the object it is about (Meta's ``leadgen_id``), when it has one."""

    type: str
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    external_id: str | None = None


@attrs.frozen(kw_only=True)
class WebhookReply:
    """The answer to a provider's handshake request: ``status``, a JSON ``body`` (``None``: empty)
    and ``headers``."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=dict)


@attrs.frozen(kw_only=True)
class LeadData:
    """A lead as a provider reports it. ``fields`` are the form's answers by field name (Meta's
    ``field_data``): the core picks email, phone and name fields out of them and keeps the rest as
    custom fields."""

    external_id: str
    fields: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    form_id: str | None = None
    created_at: datetime | None = None
    raw: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)


def hmac_sha256_hex(secret: str | bytes, message: bytes) -> str:
    """The hex HMAC-SHA256 of ``message``: what most providers' signature headers carry."""
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def signatures_match(expected: str, given: str) -> bool:
    """Constant-time comparison of two signatures."""
    return hmac.compare_digest(expected.encode(), given.encode())


class WebhookHandler:
    """Base class of the objects registered by ``register_webhooks``; override what the provider
    needs. Example::

        class AcmeWebhooks(WebhookHandler):
            def verify(self, request, secret):
                given = request.headers.get("x-acme-signature", "")
                return signatures_match(hmac_sha256_hex(secret, request.body), given)

            def events(self, payload):
                return [InboundEvent(type=payload["type"], data=payload["data"], external_id=payload["id"])]

            def routing_keys(self, event):
                return [("account_id", str(event.data["account"]))]
    """

    def handshake(self, query: Mapping[str, str], verify_token: str | None) -> str | None:
        """Answer a subscription handshake (``GET /webhook/{provider}``): the text to echo, or
        ``None`` to refuse with 403. Default: the ``hub.challenge`` scheme (Meta and others) checked
        against the deployment's ``webhook_verify_token``."""
        if not verify_token or query.get("hub.mode") != "subscribe":
            return None
        if not signatures_match(verify_token, query.get("hub.verify_token", "")):
            return None
        return query.get("hub.challenge", "")

    def verify(self, request: InboundRequest, secret: str | None) -> bool:
        """True when the raw body is authentic; ``secret`` is the deployment's ``webhook_secret``
        (``None`` when none is configured). Required."""
        raise NotImplementedError

    def challenge(self, request: InboundRequest, secret: str | None) -> WebhookReply | None:
        """A ``POST`` that confirms the endpoint instead of carrying events (Asana's
        ``X-Hook-Secret``, Zoom's ``endpoint.url_validation``): the :class:`WebhookReply` to send,
        and nothing is stored; ``None`` (the default) for any other request. Called before
        :meth:`verify`, so a handler whose provider signs its handshake (Zoom) verifies it here
        before answering anything derived from ``secret``."""
        return None

    def immediate_response(self, request: InboundRequest) -> Any:
        """A verified request that the provider expects answered in the response itself (Slack's
        ``url_verification``): return the JSON-serialisable answer, which is sent with 200 and
        nothing is stored. Default: ``None`` (store and process the event)."""
        return None

    def payload(self, body: str) -> Any:
        """A stored body parsed for :meth:`typed_events`; raises ``ValueError`` for one that cannot
        be. Default: JSON. Override for a provider that posts another format (Twilio's forms)."""
        return json.loads(body)

    def events(self, payload: Any) -> Iterable[InboundEvent]:
        """The provider events in a parsed body (:meth:`payload`). Required."""
        raise NotImplementedError

    def received_type(self, request: InboundRequest) -> str | None:
        """The event type a provider names outside the body (GitHub's ``X-GitHub-Event`` header),
        read from a verified delivery when it is received and stored with it; ``None`` (the
        default) when the body says it."""
        return None

    def typed_events(self, payload: Any, received_type: str | None) -> Iterable[InboundEvent]:
        """The provider events of a stored body, given what :meth:`received_type` read when it
        arrived. Default: :meth:`events` of the body."""
        return self.events(payload)

    #: The connection metadata names that ``routing_keys`` matches; a workspace setting one of them
    #: claims the provider's events, so each value is held by one workspace (``routing_keys`` module).
    routing_metadata_keys: tuple[str, ...] = ()

    def routing_keys(self, event: InboundEvent) -> Iterable[tuple[str, str]]:
        """``(metadata_key, value)`` pairs: the event belongs to the connection of this provider whose
        metadata has ``metadata_key == value`` (the first pair that matches wins). Default: none, so
        only per-connection URLs (``?connectionId=``) route the provider's events."""
        return ()

    def lead_ref(self, event: InboundEvent) -> str | None:
        """The provider's id of the lead an event announces, or ``None`` (not a lead event)."""
        return None

    async def fetch_lead(self, client: Any, event: InboundEvent) -> LeadData:
        """Fetch the lead announced by ``event`` through the connection ``client``
        (``await client.request(method, path, params=, json=)``); raise to fail the extraction."""
        raise NotImplementedError

    #: The most events :meth:`fetch_leads` is given at once. Raise it when the provider's API reads
    #: several leads in one call.
    lead_batch_size: int = 1

    async def fetch_leads(self, client: Any, events: Sequence[InboundEvent]) -> list[LeadData | Exception]:
        """The leads announced by ``events`` (all routed to the connection of ``client``), in their
        order; where a lead could not be read, the exception that says why (the others still count).
        The pipeline calls this with at most :attr:`lead_batch_size` events. Default:
        :meth:`fetch_lead` for each."""
        found: list[LeadData | Exception] = []
        for event in events:
            try:
                found.append(await maybe_await(self.fetch_lead(client, event)))
            except Exception as error:
                found.append(error)
        return found

    async def list_leads(self, client: Any, metadata: Mapping[str, Any], cursor: Any) -> tuple[list[LeadData], Any]:
        """One page of the connection's existing leads for an import: ``(leads, next_cursor)``,
        ``next_cursor`` ``None`` on the last page; ``cursor`` is ``None`` on the first call and must be
        JSON-serialisable (it is saved so an interrupted import resumes)."""
        raise NotImplementedError

    async def renew(self, client: Any, metadata: Mapping[str, Any]) -> datetime | None:
        """(Re)create the provider-side subscription of a connection's events; return when it
        expires (``None``: it does not). Called by ``renew-webhook-subscriptions``."""
        raise NotImplementedError

    # -- what the core asks about the handler ------------------------------------------------------

    def supports(self, method: str) -> bool:
        """True when a subclass overrides the optional ``method``."""
        return getattr(type(self), method) is not getattr(WebhookHandler, method)
