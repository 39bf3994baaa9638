"""Outbound subscriptions (4.4, 2.3): ``/connect/v1/webhooks/{type}/subscribe`` and friends.

Both documented field sets are accepted: ``{url, events?}`` and ``{callbackUrl, eventType,
callbackSecret?}`` (``callbackSecret`` goes with either). Beyond the spec: ``longTailRetries``,
``PATCH`` (re-enable, change URL or events) and ``rotate-secret`` (the old secret keeps signing,
beside the new one, for an overlap).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import DB, OUTBOUND, REGISTRY, SECRETS, SETTINGS
from patchbay.core.http.bodies import read_object
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.providers import get_provider
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso, utcnow
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.core.webhooks.signing import generate_secret

routes = web.RouteTableDef()

#: patchbay's own events about a provider's connections, sent whether or not the provider has webhooks
CONNECTION_EVENTS = frozenset({"connection.created", "connection.reconnected", "connection.failed", "connection.removed"})


def subscription_json(subscription: WebhookSubscription) -> dict[str, Any]:
    events = list(subscription.events or ["*"])
    return {
        "subscriptionId": subscription.id,
        "provider": subscription.provider,
        "url": subscription.url,
        "callbackUrl": subscription.url,
        "events": events,
        "eventType": events[0] if len(events) == 1 else events,
        "signed": subscription.secret is not None,
        "isActive": subscription.is_active,
        "longTailRetries": subscription.long_tail,
        "disabledAt": iso(subscription.disabled_at),
        "disabledReason": subscription.disabled_reason,
        "previousSecretExpiresAt": iso(subscription.previous_secret_expires_at) if subscription.previous_secret else None,
        "createdAt": iso(subscription.created_at),
    }


def _url(request: web.Request, value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad_request(f"Validation failed: {field} must be a URL")
    try:
        return request.app[OUTBOUND].check(value.strip())
    except UnsafeTarget as error:
        raise bad_request(f"Validation failed: {field}: {error}") from None


def _events(body: dict[str, Any]) -> list[str]:
    if "events" in body and body["events"] is not None:
        events = body["events"]
        if not isinstance(events, list) or not all(isinstance(e, str) and e for e in events):
            raise bad_request("Validation failed: events must be a list of event types")
        return events or ["*"]
    if "eventType" in body and body["eventType"] is not None:
        if not isinstance(body["eventType"], str) or not body["eventType"]:
            raise bad_request("Validation failed: eventType must be '*' or an event type")
        return [body["eventType"]]
    return ["*"]


def _secret(body: dict[str, Any], field: str = "callbackSecret") -> str | None:
    secret = body.get(field)
    if secret is None:
        return None
    if not isinstance(secret, str) or len(secret) < 8:
        raise bad_request(f"Validation failed: {field} must be a string of at least 8 characters")
    return secret


def _bool(body: dict[str, Any], field: str) -> bool | None:
    value = body.get(field)
    if value is not None and not isinstance(value, bool):
        raise bad_request(f"Validation failed: {field} must be a boolean")
    return value


async def _load(request: web.Request, session) -> WebhookSubscription:
    subscription = await session.get(WebhookSubscription, request.match_info["id"])
    if subscription is None or subscription.provider != request.match_info["type"]:
        raise not_found("Subscription not found")
    return subscription


@routes.post("/connect/v1/webhooks/{type}/subscribe")
@requires("webhooks.write")
async def subscribe(request: web.Request) -> web.Response:
    """Subscribe a callback URL to a provider's events."""
    provider = get_provider(request.app[REGISTRY], request.match_info["type"])
    body = await read_object(request)
    if body.get("url") is None and body.get("callbackUrl") is None:
        raise bad_request("Validation failed: url (or callbackUrl) is required")
    url = _url(request, body.get("url") if body.get("url") is not None else body.get("callbackUrl"), "url" if body.get("url") is not None else "callbackUrl")
    events = _events(body)
    if not provider.webhooks and not CONNECTION_EVENTS.issuperset(events):
        raise bad_request(
            f"Validation failed: {provider.name} sends no webhooks; a subscription to it can receive only connection events ({', '.join(sorted(CONNECTION_EVENTS))})"
        )
    secret = _secret(body)
    long_tail = _bool(body, "longTailRetries") or False
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        subscription = WebhookSubscription(
            provider=provider.name, url=url, events=events, long_tail=long_tail,
            secret=request.app[SECRETS].encrypt(secret) if secret else None,
        )  # fmt: skip
        session.add(subscription)
    return web.json_response(subscription_json(subscription), status=201)


@routes.get("/connect/v1/webhooks/{type}/subscriptions")
@requires("webhooks.view")
async def list_subscriptions(request: web.Request) -> web.Response:
    """The active subscriptions to a provider's events (``?all=true``: disabled ones too)."""
    get_provider(request.app[REGISTRY], request.match_info["type"])
    statement = select(WebhookSubscription).where(WebhookSubscription.provider == request.match_info["type"]).order_by(WebhookSubscription.created_at)
    if request.query.get("all") != "true":
        statement = statement.where(WebhookSubscription.is_active.is_(True))
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        rows = (await session.scalars(statement)).all()
    return web.json_response([subscription_json(row) for row in rows])


@routes.delete("/connect/v1/webhooks/{type}/subscribe/{id}")
@requires("webhooks.write")
async def unsubscribe(request: web.Request) -> web.Response:
    """Delete a subscription; its pending deliveries stop."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        await session.delete(await _load(request, session))
    return web.json_response({"success": True})


@routes.patch("/connect/v1/webhooks/{type}/subscribe/{id}")
@requires("webhooks.write")
async def update_subscription(request: web.Request) -> web.Response:
    """Change a subscription: isActive (re-enable), url, events, longTailRetries."""
    body = await read_object(request)
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await _load(request, session)
        if body.get("url") is not None or body.get("callbackUrl") is not None:
            field = "url" if body.get("url") is not None else "callbackUrl"
            subscription.url = _url(request, body[field], field)
        if "events" in body or "eventType" in body:
            subscription.events = _events(body)
        long_tail = _bool(body, "longTailRetries")
        if long_tail is not None:
            subscription.long_tail = long_tail
        active = _bool(body, "isActive")
        if active is True and not subscription.is_active:
            subscription.is_active, subscription.disabled_at, subscription.disabled_reason, subscription.failing_since = True, None, None, None
        elif active is False:
            subscription.is_active, subscription.disabled_at, subscription.disabled_reason = False, utcnow(), "disabled by the workspace"
    return web.json_response(subscription_json(subscription))


@routes.post("/connect/v1/webhooks/{type}/subscribe/{id}/rotate-secret")
@requires("webhooks.write")
async def rotate_secret(request: web.Request) -> web.Response:
    """Replace the callbackSecret; the old one keeps signing beside it for the overlap."""
    raw = await request.read()
    body = await read_object(request) if raw.strip() else {}
    new_secret = _secret(body) or generate_secret()
    overlap = body.get("overlapSeconds", request.app[SETTINGS].webhooks.secret_overlap_hours * 3600)
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 0:
        raise bad_request("Validation failed: overlapSeconds must be a whole number of seconds")
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await _load(request, session)
        if subscription.secret and overlap > 0:
            subscription.previous_secret = subscription.secret
            subscription.previous_secret_expires_at = utcnow() + timedelta(seconds=overlap)
        else:
            subscription.previous_secret, subscription.previous_secret_expires_at = None, None
        subscription.secret = request.app[SECRETS].encrypt(new_secret)
    answer = subscription_json(subscription)
    answer["callbackSecret"] = new_secret
    return web.json_response(answer, status=201)
