"""Outbound subscriptions (4.4, 2.3): ``/connect/v1/webhooks/{type}/subscribe`` and friends.

Both documented field sets are accepted: ``{url, events?}`` and ``{callbackUrl, eventType,
callbackSecret?}`` (``callbackSecret`` goes with either). Beyond the spec: ``longTailRetries``,
``PATCH`` (re-enable, change URL or events) and ``rotate-secret`` (the old secret keeps signing,
beside the new one, for an overlap).
"""

from __future__ import annotations

from typing import Any, TypeVar

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.providers import get_provider
from patchbay.core.http.responses import reply, returns
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso
from patchbay.core.webhooks import subscriptions_service as service
from patchbay.core.webhooks.api_models import (
    RotatedSubscription,
    RotateSecretDto,
    SubscribeDto,
    SubscriptionDeleted,
    UpdateSubscriptionDto,
    WebhookSubscriptionOut,
    event_types,
)
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.core.webhooks.signing import generate_secret

routes = web.RouteTableDef()
T = TypeVar("T")


async def read_dto(request: web.Request, model: type[T], *, optional: bool = False) -> T:
    """The body as ``model`` (400 naming a field of the wrong type); ``optional``: no body at all
    is the model's defaults. ``events`` that is not a list is refused here: cattrs would read a
    string as the list of its characters."""
    if optional and not (await request.read()).strip():
        return model()
    body = await read_object(request)
    if body.get("events") is not None and not isinstance(body["events"], list):
        raise bad_request("Validation failed: events must be a list of event types")
    return structure(body, model)


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


def _callback_url(request: web.Request, dto: SubscribeDto | UpdateSubscriptionDto) -> str | None:
    """The checked URL of either field set (``url`` first), or None when neither is given."""
    outbound = request.app[SERVICES].outbound
    if dto.url is not None:
        return service.check_url(outbound, dto.url, "url")
    if dto.callbackUrl is not None:
        return service.check_url(outbound, dto.callbackUrl, "callbackUrl")
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
    services = request.app[SERVICES]
    provider = get_provider(services.registry, request.match_info["type"])
    dto = await read_dto(request, SubscribeDto)
    url = _callback_url(request, dto)
    if url is None:
        raise bad_request("Validation failed: url (or callbackUrl) is required")
    events = _events(provider, dto)
    secret = dto.callbackSecret
    subscription = await service.subscribe(
        services, principal_of(request).workspace_id, provider=provider.name, url=url, events=events, long_tail=dto.longTailRetries or False, secret=secret
    )
    return reply(request, subscription_json(subscription), status=201)


@routes.get("/connect/v1/webhooks/{type}/subscriptions")
@query(all={"type": "boolean", "default": False, "description": "true: disabled subscriptions too"})
@returns(list[WebhookSubscriptionOut])
@requires("webhooks.view")
async def list_subscriptions(request: web.Request) -> web.Response:
    """The active subscriptions to a provider's events (``?all=true``: disabled ones too)."""
    services = request.app[SERVICES]
    get_provider(services.registry, request.match_info["type"])
    rows = await service.subscriptions_of(
        services, principal_of(request).workspace_id, request.match_info["type"], include_disabled=request.query.get("all") == "true"
    )
    return reply(request, [subscription_json(row) for row in rows])


@routes.delete("/connect/v1/webhooks/{type}/subscribe/{id}")
@returns(SubscriptionDeleted)
@requires("webhooks.write")
async def unsubscribe(request: web.Request) -> web.Response:
    """Delete a subscription; its pending deliveries stop."""
    await service.unsubscribe(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["type"], request.match_info["id"])
    return reply(request, {"success": True})


@routes.patch("/connect/v1/webhooks/{type}/subscribe/{id}")
@accepts(UpdateSubscriptionDto)
@returns(WebhookSubscriptionOut)
@requires("webhooks.write")
async def update_subscription(request: web.Request) -> web.Response:
    """Change a subscription: isActive (re-enable), url, events, longTailRetries."""
    dto = await read_dto(request, UpdateSubscriptionDto)
    url = _callback_url(request, dto)
    services = request.app[SERVICES]
    provider = get_provider(services.registry, request.match_info["type"])
    events = _events(provider, dto) if dto.events is not None or dto.eventType is not None else None
    subscription = await service.change(
        services,
        principal_of(request).workspace_id,
        request.match_info["type"],
        request.match_info["id"],
        url=url,
        events=events,
        long_tail=dto.longTailRetries,
        is_active=dto.isActive,
    )
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
    subscription = await service.rotate(
        request.app[SERVICES],
        principal_of(request).workspace_id,
        request.match_info["type"],
        request.match_info["id"],
        new_secret=new_secret,
        overlap_seconds=dto.overlapSeconds,
    )
    return reply(request, {**subscription_json(subscription), "callbackSecret": new_secret}, status=201)
