"""The :class:`~patchbay.WebhookHandler` of a provider's declared ``[webhooks]`` table."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from patchbay.core.declared.format import Webhooks
from patchbay.core.declared.runner import select
from patchbay.core.webhooks.protocol import InboundEvent, InboundRequest, WebhookHandler, signatures_match


class DeclaredWebhooks(WebhookHandler):
    """Verifies bodies as ``verify`` declares and reads their events: each event's type is
    ``event_type`` of it, its id ``event_id``, and its data the ``item`` of the trigger that claims
    the type (``items``: event type -> JMESPath), else the whole event."""

    def __init__(self, spec: Webhooks, items: Mapping[str, str | None]) -> None:
        self.spec = spec
        self.items = dict(items)

    def signature(self, secret: str, body: bytes) -> str:
        """What the declared header carries for ``body`` under ``secret`` (scheme ``hmac``)."""
        verification = self.spec.verify
        digest = hmac.new(secret.encode(), body, getattr(hashlib, verification.algorithm)).digest()
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
        return signatures_match(self.signature(secret, request.body), given)

    def events(self, payload: Any) -> list[InboundEvent]:
        bodies = [payload] if self.spec.events is None else select(self.spec.events, payload)
        found = []
        for body in bodies if isinstance(bodies, list) else []:
            kind = select(self.spec.event_type, body)
            if not isinstance(kind, str) or not kind:
                continue
            data = select(self.items.get(kind), body)
            event_id = select(self.spec.event_id, body) if self.spec.event_id else None
            found.append(InboundEvent(type=kind, data=data if isinstance(data, dict) else {"value": data}, external_id=None if event_id is None else str(event_id)))
        return found
