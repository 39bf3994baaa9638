"""The bodies the webhook routes read and answer (spec 2.3, 2.13, 4.4; contract section 7): the
event log, deliveries with their attempts, and outbound subscriptions. The models that validate
and serialize them are the ones ``/openapi.json`` publishes (``core.http.responses``); what a
schema cannot say (a callback URL the deployment may reach, a provider that sends no webhooks) the
services check (``subscriptions_service``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from patchbay.core.http.responses import page_of, response_model

#: a subscription's callbackSecret: signs each forwarded event (spec 6.3)
CallbackSecret = Annotated[str, Field(min_length=8)]

EventTypes = Annotated[list[Annotated[str, Field(min_length=1)]], Field(description="event types; empty or left out: every event (`*`)")]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class SubscribeDto:
    """The body of ``POST /connect/v1/webhooks/{type}/subscribe`` (spec 2.3): either documented
    field set, ``{url, events?}`` or ``{callbackUrl, eventType}``; ``url`` wins when both are
    given, ``events`` over ``eventType``. ``longTailRetries`` keeps retrying for hours after the
    fast retries."""

    url: str | None = None
    events: EventTypes | None = None
    callbackUrl: str | None = None
    eventType: Annotated[str, Field(min_length=1)] | None = None
    callbackSecret: CallbackSecret | None = None
    longTailRetries: bool | None = None


@dataclass
class UpdateSubscriptionDto:
    """The body of ``PATCH /connect/v1/webhooks/{type}/subscribe/{id}``: the fields given change,
    a field left out or null stays; ``isActive: true`` re-enables a disabled subscription."""

    url: str | None = None
    callbackUrl: str | None = None
    events: EventTypes | None = None
    eventType: Annotated[str, Field(min_length=1)] | None = None
    longTailRetries: bool | None = None
    isActive: bool | None = None


@dataclass
class RotateSecretDto:
    """The optional body of ``rotate-secret``: the new ``callbackSecret`` (one is generated when
    left out, and shown once) and how long the old one keeps signing beside it (``overlapSeconds``;
    left out or null: the deployment's overlap; 0: the old secret stops at once)."""

    callbackSecret: CallbackSecret | None = None
    overlapSeconds: Annotated[int, Field(ge=0)] | None = None


@dataclass
class RedeliverDto:
    """The optional body of ``POST /connect/v1/webhooks/events/{id}/redeliver``: one active
    subscription to forward to, else every matching one."""

    subscriptionId: str | None = None


def event_types(events: list[str] | None, event_type: str | None) -> list[str]:
    """The event types of either field set, ``events`` first (``["*"]`` when neither names one)."""
    if events is not None:
        return events or ["*"]
    return [event_type] if event_type is not None else ["*"]


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class WebhookEventOut:
    """An inbound provider event (spec 2.13); ``status`` is RECEIVED, PROCESSED, DUPLICATE or
    FAILED, ``reason`` says why it failed."""

    id: str
    provider: str
    eventType: str | None
    status: str
    reason: str | None
    connectionId: str | None
    leadId: str | None
    externalId: str | None
    parentId: str | None
    payload: dict[str, Any] | None
    receivedAt: str | None
    processedAt: str | None


WebhookEventPage = page_of(WebhookEventOut)


@response_model
class WebhookAttemptOut:
    """One HTTP try of a delivery: the receiver's status (null when unreachable), the duration and
    an excerpt of its answer, or the error."""

    attempt: int
    statusCode: int | None
    durationMs: int
    responseExcerpt: str | None
    error: str | None
    at: str | None


@response_model
class WebhookDeliveryOut:
    """The forwarding of an event to one subscription; ``status`` is pending, succeeded, failed
    or gone (the receiver answered 410)."""

    id: str
    eventId: str
    subscriptionId: str
    status: str
    attempts: int
    lastStatusCode: int | None
    lastError: str | None
    nextAttemptAt: str | None
    deliveredAt: str | None
    manual: bool
    createdAt: str | None


@response_model
class WebhookDeliveryWithAttempts(WebhookDeliveryOut):
    """A delivery with every attempt, oldest first."""

    attemptLog: list[WebhookAttemptOut]


WebhookDeliveryPage = page_of(WebhookDeliveryWithAttempts)


@response_model
class WebhookEventDetail(WebhookEventOut):
    """An inbound event with its deliveries and their attempts."""

    deliveries: list[WebhookDeliveryWithAttempts]


@response_model
class Redelivered:
    """The deliveries a manual redelivery queued."""

    eventId: str
    deliveries: list[WebhookDeliveryOut]


@response_model
class WebhookSubscriptionOut:
    """An outbound subscription (spec 2.3, 4.4) under both documented field names (``url`` and
    ``callbackUrl``; ``events`` and ``eventType``, one type or the list); never its secret."""

    subscriptionId: str
    provider: str
    url: str
    callbackUrl: str
    events: list[str]
    eventType: str | list[str]
    signed: bool
    isActive: bool
    longTailRetries: bool
    disabledAt: str | None
    disabledReason: str | None
    previousSecretExpiresAt: str | None
    createdAt: str | None


@response_model
class RotatedSubscription(WebhookSubscriptionOut):
    """The subscription after a rotation, with its new ``callbackSecret``, shown this once."""

    callbackSecret: str


@response_model
class SubscriptionDeleted:
    success: bool
