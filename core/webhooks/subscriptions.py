"""Outbound subscriptions (4.4, 2.3): ``/connect/v1/webhooks/{type}/subscribe`` and friends.

Both documented field sets are accepted: ``{url, events?}`` and ``{callbackUrl, eventType,
callbackSecret?}`` (``callbackSecret`` goes with either). Beyond the spec: ``longTailRetries``,
``PATCH`` (re-enable, change URL or events) and ``rotate-secret`` (the old secret keeps signing,
beside the new one, for an overlap).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB, OUTBOUND, REGISTRY, SECRETS, SETTINGS
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.providers import get_provider
from patchbay.core.http.responses import reply, returns
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso
from patchbay.core.webhooks import subscriptions_service as service
from patchbay.core.webhooks.api_models import (
    RotatedSubscription, RotateSecretDto, SubscribeDto, SubscriptionDeleted, UpdateSubscriptionDto, WebhookSubscriptionOut,
    event_types, read_dto,
)  # fmt: skip
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.core.webhooks.signing import generate_secret

routes = web.RouteTableDef()


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


def _url(request: web.Request, value: str, field: str) -> str:
    if not value.strip():
        raise bad_request(f"Validation failed: {field} must be a URL")
    try:
        return request.app[OUTBOUND].check(value.strip())
    except UnsafeTarget as error:
        raise bad_request(f"Validation failed: {field}: {error}") from None
    except ValueError:  # urlsplit's "Invalid IPv6 URL" ("http://[")
        raise bad_request(f"Validation failed: {field} must be a URL") from None


def _callback_url(request: web.Request, dto: SubscribeDto | UpdateSubscriptionDto) -> str | None:
    """The checked URL of either field set (``url`` first), or None when neither is given."""
    if dto.url is not None:
        return _url(request, dto.url, "url")
    if dto.callbackUrl is not None:
        return _url(request, dto.callbackUrl, "callbackUrl")
    return None


def _events(provider: Provider, dto: SubscribeDto | UpdateSubscriptionDto) -> list[str]:
    """The event types of either field set, which the provider must be able to send."""
    return service.check_events(provider, event_types(dto.events, dto.eventType))


@routes.post("/connect/v1/webhooks/{type}/subscribe")
@accepts(SubscribeDto)
@returns(WebhookSubscriptionOut, status=201, description="Subscribed")
@requires("webhooks.write")
async def subscribe(request: web.Request) -> web.Response:
    """Subscribe a callback URL to a provider's events.

    A provider that sends no webhooks takes subscriptions to the connection events only
    (``connection.created``, ``connection.reconnected``, ``connection.failed``,
    ``connection.removed``)."""
    provider = get_provider(request.app[REGISTRY], request.match_info["type"])
    dto = await read_dto(request, SubscribeDto)
    url = _callback_url(request, dto)
    if url is None:
        raise bad_request("Validation failed: url (or callbackUrl) is required")
    events = _events(provider, dto)
    secret = dto.callbackSecret
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await service.create_subscription(
            session, request.app[SECRETS], provider=provider.name, url=url, events=events, long_tail=dto.longTailRetries or False, secret=secret
        )  # fmt: skip
    return reply(request, subscription_json(subscription), status=201)


@routes.get("/connect/v1/webhooks/{type}/subscriptions")
@query(all={"type": "boolean", "default": False, "description": "true: disabled subscriptions too"})
@returns(list[WebhookSubscriptionOut])
@requires("webhooks.view")
async def list_subscriptions(request: web.Request) -> web.Response:
    """The active subscriptions to a provider's events (``?all=true``: disabled ones too)."""
    get_provider(request.app[REGISTRY], request.match_info["type"])
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        rows = await service.list_subscriptions(session, request.match_info["type"], include_disabled=request.query.get("all") == "true")
    return reply(request, [subscription_json(row) for row in rows])


@routes.delete("/connect/v1/webhooks/{type}/subscribe/{id}")
@returns(SubscriptionDeleted)
@requires("webhooks.write")
async def unsubscribe(request: web.Request) -> web.Response:
    """Delete a subscription; its pending deliveries stop."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        await service.delete_subscription(session, request.match_info["type"], request.match_info["id"])
    return reply(request, {"success": True})


@routes.patch("/connect/v1/webhooks/{type}/subscribe/{id}")
@accepts(UpdateSubscriptionDto)
@returns(WebhookSubscriptionOut)
@requires("webhooks.write")
async def update_subscription(request: web.Request) -> web.Response:
    """Change a subscription: isActive (re-enable), url, events, longTailRetries."""
    dto = await read_dto(request, UpdateSubscriptionDto)
    url = _callback_url(request, dto)
    provider = get_provider(request.app[REGISTRY], request.match_info["type"])
    events = _events(provider, dto) if dto.events is not None or dto.eventType is not None else None
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await service.update_subscription(
            session, request.match_info["type"], request.match_info["id"], url=url, events=events, long_tail=dto.longTailRetries, is_active=dto.isActive
        )  # fmt: skip
    return reply(request, subscription_json(subscription))


@routes.post("/connect/v1/webhooks/{type}/subscribe/{id}/rotate-secret")
@accepts(RotateSecretDto, required=False)
@returns(RotatedSubscription, status=201, description="Rotated")
@requires("webhooks.write")
async def rotate_secret(request: web.Request) -> web.Response:
    """Replace the callbackSecret; the old one keeps signing beside it for the overlap.

    The new secret (generated when the body names none) is in the answer, this once."""
    dto = await read_dto(request, RotateSecretDto, optional=True)
    new_secret = dto.callbackSecret or generate_secret()
    overlap = request.app[SETTINGS].webhooks.secret_overlap_hours * 3600 if dto.overlapSeconds is None else dto.overlapSeconds
    if overlap < 0:
        raise bad_request("Validation failed: overlapSeconds must be a whole number of seconds")
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await service.rotate_secret(
            session, request.app[SECRETS], request.match_info["type"], request.match_info["id"], new_secret=new_secret, overlap_seconds=overlap
        )  # fmt: skip
    return reply(request, {**subscription_json(subscription), "callbackSecret": new_secret}, status=201)
