"""The :class:`~patchbay.WebhookHandler` of a provider's declared ``[webhooks]`` table."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from patchbay.core.declared.format import Webhooks
from patchbay.core.declared.runner import select
from patchbay.core.webhooks.protocol import InboundEvent, InboundRequest, WebhookHandler, WebhookReply, hmac_sha256_hex, signatures_match

_SIGNED = re.compile(r"(\{body\}|\{timestamp\}|\{url\})")


class DeclaredWebhooks(WebhookHandler):
    """Verifies bodies as ``verify`` declares and reads their events: each event's type is
    ``event_type`` of it (or the ``event_type_header`` the delivery came with), its id ``event_id``,
    and its data the ``item`` of the trigger that claims the type (``items``: event type ->
    JMESPath), else the whole event. Answers the declared ``handshake``."""

    def __init__(self, spec: Webhooks, items: Mapping[str, str | None], *, clock: Callable[[], float] = time.time) -> None:
        self.spec = spec
        self.items = dict(items)
        self.clock = clock

    def signature(self, secret: str, body: bytes, timestamp: str = "", url: str = "") -> str:
        """What the declared header carries (its signature value) for ``body`` sent at
        ``timestamp`` to ``url`` under ``secret`` (scheme ``hmac``)."""
        verification = self.spec.verify
        values = {"{body}": body, "{timestamp}": timestamp.encode(), "{url}": url.encode()}
        signed = b"".join(values.get(part, part.encode()) for part in _SIGNED.split(verification.signed))
        digest = hmac.new(secret.encode(), signed, getattr(hashlib, verification.algorithm)).digest()
        encoded = digest.hex() if verification.encoding == "hex" else base64.b64encode(digest).decode()
        return verification.prefix + encoded

    def verify(self, request: InboundRequest, secret: str | None) -> bool:
        verification = self.spec.verify
        if verification.scheme == "none":
            return True
        given = request.headers.get(verification.header or "", "")
        if not secret or not given:
            return False
        if verification.scheme == "token":
            return signatures_match(secret, given)
        candidates, timestamp = [given], ""
        if verification.signature_key:
            pairs = [part.strip().partition("=") for part in given.split(",")]
            candidates = [value for key, _, value in pairs if key == verification.signature_key]
            timestamp = next((value for key, _, value in pairs if key == verification.timestamp_key), "") if verification.timestamp_key else ""
        if verification.timestamp_header:
            timestamp = request.headers.get(verification.timestamp_header, "")
        if (verification.timestamp_key or verification.timestamp_header) and not self._fresh(timestamp):
            return False
        expected = self.signature(secret, request.body, timestamp, request.url)
        return any(signatures_match(expected, candidate) for candidate in candidates)

    def _fresh(self, timestamp: str) -> bool:
        """Whether ``timestamp`` (Unix seconds, or an ISO 8601 date-time with its offset) is within
        ``tolerance`` seconds of now."""
        text = timestamp.strip()
        try:
            when = None if text.isdigit() else datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return False
        if when is not None and when.tzinfo is None:
            return False
        moment = float(text) if when is None else when.timestamp()
        return abs(self.clock() - moment) <= self.spec.verify.tolerance

    # -- handshakes -------------------------------------------------------------------------------

    def handshake(self, query: Mapping[str, str], verify_token: str | None) -> str | None:
        handshake = self.spec.handshake
        if handshake is None or handshake.style != "echo_query":
            return super().handshake(query, verify_token)
        return query.get(handshake.name) or None

    def challenge(self, request: InboundRequest, secret: str | None) -> WebhookReply | None:
        handshake = self.spec.handshake
        if handshake is None or handshake.style == "echo_query":
            return None
        if handshake.style == "echo_header":
            value = request.headers.get(handshake.name)
            return None if not value else WebhookReply(headers={handshake.name: value})
        try:
            body = json.loads(request.body)
        except ValueError:
            return None
        if not isinstance(body, dict) or select(self.spec.event_type, body) != handshake.event:
            return None
        token = select(handshake.token, body)
        if not isinstance(token, str) or not token or not secret or not self.verify(request, secret):
            return None  # an unverified or malformed one falls through to verify: 401
        return WebhookReply(body={handshake.name: token, handshake.signature_key: hmac_sha256_hex(secret, token.encode())})

    # -- events ------------------------------------------------------------------------------------

    def received_type(self, request: InboundRequest) -> str | None:
        header = self.spec.event_type_header
        return request.headers.get(header) or None if header else None

    def events(self, payload: Any) -> list[InboundEvent]:
        return self.typed_events(payload, None)

    def typed_events(self, payload: Any, received_type: str | None) -> list[InboundEvent]:
        bodies = [payload] if self.spec.events is None else select(self.spec.events, payload)
        found = []
        for body in bodies if isinstance(bodies, list) else []:
            kind = received_type if self.spec.event_type_header else select(self.spec.event_type, body)
            if not isinstance(kind, str) or not kind:
                continue
            data = select(self.items.get(kind), body)
            event_id = select(self.spec.event_id, body) if self.spec.event_id else None
            found.append(
                InboundEvent(type=kind, data=data if isinstance(data, dict) else {"value": data}, external_id=None if event_id is None else str(event_id))
            )
        return found
