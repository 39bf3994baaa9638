"""The ``renew-webhook-subscriptions`` job: keep each connection's provider-side subscription alive
(Meta's page subscription to ``leadgen``) through its handler's ``renew``."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from patchbay.core.awaitables import maybe_await
from patchbay.core.connections.client import open_client
from patchbay.core.connections.models import Connection
from patchbay.core.services import Services
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookRegistration

log = logging.getLogger(__name__)

RENEW_EVERY = timedelta(days=7)
RENEW_BEFORE_EXPIRY = timedelta(days=1)


def _due(registration: WebhookRegistration | None) -> bool:
    now = utcnow()
    if registration is None or registration.status != "active" or registration.renewed_at is None:
        return True
    if registration.expires_at is not None and registration.expires_at - RENEW_BEFORE_EXPIRY <= now:
        return True
    return now - registration.renewed_at >= RENEW_EVERY


async def renew_webhook_subscriptions(services: Services) -> dict[str, Any]:
    handlers = {name: handler for name, handler in services.registry.objects("webhooks").items() if getattr(handler, "supports", lambda _m: False)("renew")}
    if not handlers:
        return {"renewed": 0, "failed": 0}
    async with services.db.session() as session:
        connections = (await session.scalars(select(Connection).where(Connection.provider.in_(list(handlers)), Connection.status == "connected"))).all()
        registrations = {r.connection_id: r for r in (await session.scalars(select(WebhookRegistration))).all()}
    renewed = failed = 0
    for connection in connections:
        if not _due(registrations.get(connection.id)):
            continue
        expires_at, error = None, None
        try:
            client = await open_client(services, workspace_id=connection.workspace_id, connection_id=connection.id)
            expires_at = await maybe_await(handlers[connection.provider].renew(client, dict(connection.meta or {})))
        except Exception as exc:
            error = str(exc) or repr(exc)
            log.warning("renewing the webhook subscription of connection %s failed: %s", connection.id, error)
        async with services.db.transaction(tenant=connection.workspace_id) as session:
            registration = await session.scalar(select(WebhookRegistration).where(WebhookRegistration.connection_id == connection.id))
            if registration is None:
                registration = WebhookRegistration(connection_id=connection.id, provider=connection.provider)
                session.add(registration)
            registration.status = "failed" if error else "active"
            registration.error = error
            if not error:
                registration.renewed_at, registration.expires_at = utcnow(), expires_at
        failed += bool(error)
        renewed += not error
    return {"renewed": renewed, "failed": failed}
