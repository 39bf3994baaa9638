"""Stripe as patchbay's payment provider: Checkout sessions, customer-portal sessions, cancel at
period end and resume, and webhooks verified with Stripe's signature scheme.

Talks to Stripe's REST API (form-encoded, ``Authorization: Bearer <secret key>``) at
``[stripe] api_base`` through the shared HTTP client. Prices map to plans through ``[stripe]
price_starter``, ``price_professional`` and ``price_enterprise``. The ``[stripe]`` section is this
plugin's own (``StripeSettings``, declared with ``register_settings``); the core knows nothing of it.

Webhook verification (https://docs.stripe.com/webhooks#verify-manually): the ``Stripe-Signature``
header is ``t=<unix time>,v1=<signature>[,v1=...]``; a ``v1`` signature is the hex HMAC-SHA256 of
``"<t>.<raw body>"`` under the endpoint's signing secret (``[stripe] webhook_secret``). The event is
refused when no ``v1`` matches or when ``t`` is older than ``webhook_tolerance_seconds``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from patchbay import (
    CheckoutRequest,
    CheckoutSession,
    PaymentContext,
    PaymentEvent,
    PaymentProvider,
    PaymentProviderError,
    SubscriptionState,
    WebhookVerificationError,
    hookimpl,
)

PLANS = ("starter", "professional", "enterprise")


@attrs.define(kw_only=True)
class StripeSettings:
    """The ``[stripe]`` section (``PATCHBAY_STRIPE_<FIELD>``), declared with ``register_settings``."""

    secret_key: str | None = None
    webhook_secret: str | None = None
    api_base: str = "https://api.stripe.com"
    webhook_tolerance_seconds: int = 300
    price_starter: str | None = None
    price_professional: str | None = None
    price_enterprise: str | None = None


def _prices(config: Any) -> dict[str, str]:
    return {plan: price for plan in PLANS if (price := getattr(config, f"price_{plan}", None))}


def sign(payload: bytes, secret: str, timestamp: int) -> str:
    """The ``Stripe-Signature`` header value for ``payload`` (used by tests and local tooling)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify_signature(payload: bytes, header: str | None, secret: str, tolerance: int, now: float | None = None) -> None:
    """Raise :class:`WebhookVerificationError` unless ``header`` signs ``payload`` recently enough."""
    if not header:
        raise WebhookVerificationError("Missing Stripe-Signature header")
    timestamp = None
    signatures = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            timestamp = value
        elif key == "v1":
            signatures.append(value)
    if timestamp is None or not timestamp.isdigit() or not signatures:
        raise WebhookVerificationError("Malformed Stripe-Signature header")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise WebhookVerificationError("Invalid signature")
    if tolerance > 0 and int(timestamp) < (time.time() if now is None else now) - tolerance:
        raise WebhookVerificationError("Timestamp outside the tolerance zone")


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Stripe's form encoding of nested parameters: ``a[b][0][c]=v``."""
    pairs: list[tuple[str, str]] = []
    for key, value in data.items():
        name = f"{prefix}[{key}]" if prefix else str(key)
        if isinstance(value, Mapping):
            pairs += _flatten(value, name)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                pairs += _flatten(item, f"{name}[{index}]") if isinstance(item, Mapping) else [(f"{name}[{index}]", str(item))]
        elif isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        elif value is not None:
            pairs.append((name, str(value)))
    return pairs


def _timestamp(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value), UTC) if isinstance(value, int | float) and not isinstance(value, bool) else None


class StripePayments(PaymentProvider):
    signature_header = "Stripe-Signature"

    def configured(self, ctx: PaymentContext) -> bool:
        return bool(ctx.config is not None and ctx.config.secret_key)

    def price_configured(self, ctx: PaymentContext, plan: str) -> bool:
        return plan in _prices(ctx.config)

    # -- REST calls ---------------------------------------------------------------------------

    async def _post(self, ctx: PaymentContext, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        url = ctx.config.api_base.rstrip("/") + path
        headers = {"Authorization": f"Bearer {ctx.config.secret_key}", "Content-Type": "application/x-www-form-urlencoded"}
        try:
            async with ctx.http.post(url, data=_flatten(params), headers=headers) as response:
                body = await response.json(content_type=None)
                status = response.status
        except (OSError, ValueError) as error:
            raise PaymentProviderError(f"Stripe could not be reached: {error}") from None
        except Exception as error:  # aiohttp.ClientError and timeouts
            raise PaymentProviderError(f"Stripe could not be reached: {error!r}") from None
        if status >= 400 or not isinstance(body, dict):
            message = body.get("error", {}).get("message") if isinstance(body, dict) else None
            raise PaymentProviderError(f"Stripe answered {status}: {message or 'error'}")
        return body

    def _subscription(self, ctx: PaymentContext, obj: Mapping[str, Any]) -> SubscriptionState:
        by_price = {price: plan for plan, price in _prices(ctx.config).items()}
        items = (obj.get("items") or {}).get("data") or []
        price = ((items[0].get("price") or {}).get("id")) if items else None
        period_end = obj.get("current_period_end") or (items[0].get("current_period_end") if items else None)
        metadata = obj.get("metadata") or {}
        return SubscriptionState(
            subscription_id=obj["id"],
            customer_id=obj.get("customer") if isinstance(obj.get("customer"), str) else (obj.get("customer") or {}).get("id"),
            status=str(obj.get("status") or "unknown"),
            plan=by_price.get(price) or (metadata.get("plan") if metadata.get("plan") in PLANS else None),
            cancel_at_period_end=bool(obj.get("cancel_at_period_end")),
            current_period_end=_timestamp(period_end),
        )

    async def create_checkout(self, ctx: PaymentContext, request: CheckoutRequest) -> CheckoutSession:
        price = _prices(ctx.config).get(request.plan)
        if price is None:
            raise PaymentProviderError(f"No Stripe price is configured for plan {request.plan}")
        metadata = {"workspace_id": request.workspace_id, "plan": request.plan}
        params: dict[str, Any] = {
            "mode": "subscription",
            "line_items": [{"price": price, "quantity": 1}],
            "success_url": request.success_url,
            "cancel_url": request.cancel_url,
            "client_reference_id": request.workspace_id,
            "metadata": metadata,
            "subscription_data": {"metadata": metadata},
        }
        if request.customer_id:
            params["customer"] = request.customer_id
        elif request.customer_email:
            params["customer_email"] = request.customer_email
        body = await self._post(ctx, "/v1/checkout/sessions", params)
        return CheckoutSession(id=body["id"], url=body["url"])

    async def create_portal(self, ctx: PaymentContext, *, customer_id: str, return_url: str) -> str:
        return (await self._post(ctx, "/v1/billing_portal/sessions", {"customer": customer_id, "return_url": return_url}))["url"]

    async def cancel_subscription(self, ctx: PaymentContext, *, subscription_id: str) -> SubscriptionState:
        return self._subscription(ctx, await self._post(ctx, f"/v1/subscriptions/{subscription_id}", {"cancel_at_period_end": True}))

    async def resume_subscription(self, ctx: PaymentContext, *, subscription_id: str) -> SubscriptionState:
        return self._subscription(ctx, await self._post(ctx, f"/v1/subscriptions/{subscription_id}", {"cancel_at_period_end": False}))

    # -- webhooks -----------------------------------------------------------------------------

    def parse_webhook(self, ctx: PaymentContext, *, payload: bytes, signature: str | None, now: float | None = None) -> PaymentEvent:
        secret = getattr(ctx.config, "webhook_secret", None)
        if not secret:
            raise WebhookVerificationError("Stripe webhook secret is not configured")
        verify_signature(payload, signature, secret, ctx.config.webhook_tolerance_seconds, now)
        try:
            event = json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise WebhookVerificationError("Malformed event body") from None
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("type"), str):
            raise WebhookVerificationError("Malformed event body")
        obj = (event.get("data") or {}).get("object") or {}
        kind = event["type"]
        if kind == "checkout.session.completed":
            metadata = obj.get("metadata") or {}
            return PaymentEvent(
                id=event["id"],
                type=kind,
                kind="checkout_completed",
                workspace_id=obj.get("client_reference_id") or metadata.get("workspace_id"),
                customer_id=obj.get("customer") if isinstance(obj.get("customer"), str) else None,
                plan=metadata.get("plan") if metadata.get("plan") in PLANS else None,
                subscription=SubscriptionState(subscription_id=obj["subscription"], customer_id=obj.get("customer"), status="active", plan=metadata.get("plan"))
                if isinstance(obj.get("subscription"), str)
                else None,
                data=obj,
            )
        if kind in ("customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted"):
            subscription = self._subscription(ctx, obj)
            return PaymentEvent(
                id=event["id"],
                type=kind,
                kind="subscription_deleted" if kind.endswith("deleted") else "subscription_updated",
                workspace_id=(obj.get("metadata") or {}).get("workspace_id"),
                customer_id=subscription.customer_id,
                plan=subscription.plan,
                subscription=subscription,
                data=obj,
            )
        return PaymentEvent(id=event["id"], type=kind, kind="other", data=obj)


@hookimpl
def register_payment_providers(register):
    register("stripe", StripePayments())


@hookimpl
def register_settings(register):
    register("stripe", StripeSettings)
