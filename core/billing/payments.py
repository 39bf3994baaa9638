"""What a payment-provider plugin registers with ``register_payment_providers``: a
:class:`PaymentProvider` under a name, and the value types its methods exchange with the core.

The core hands every call a :class:`PaymentContext`: the shared HTTP client and the settings section
named like the provider (``[stripe]`` for ``stripe``), so a plugin never reads settings or storage
itself. The first registered provider whose ``configured(ctx)`` is true serves billing; with none,
plans are set through the CLI or the accounts API.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

PAID_PLANS = ("starter", "professional", "enterprise")


@attrs.frozen(kw_only=True)
class PaymentContext:
    http: Any  # aiohttp.ClientSession, shared by the app
    config: Any  # the settings section named like the provider, or None
    base_url: str  # patchbay's public URL


@attrs.frozen(kw_only=True)
class CheckoutRequest:
    workspace_id: str
    plan: str
    success_url: str
    cancel_url: str
    customer_id: str | None = None
    customer_email: str | None = None


@attrs.frozen(kw_only=True)
class CheckoutSession:
    id: str
    url: str


@attrs.frozen(kw_only=True)
class SubscriptionState:
    """A subscription as the payment provider reports it. ``plan`` is None when its price maps to no
    plan of ours."""

    subscription_id: str
    customer_id: str | None
    status: str
    plan: str | None = None
    cancel_at_period_end: bool = False
    current_period_end: datetime | None = None


@attrs.frozen(kw_only=True)
class PaymentEvent:
    """A verified webhook event, reduced to what billing needs.

    ``kind``: ``checkout_completed`` (customer and subscription now belong to ``workspace_id``),
    ``subscription_updated``, ``subscription_deleted`` (back to the free plan) or ``other``
    (acknowledged, nothing to do).
    """

    id: str
    type: str
    kind: str
    workspace_id: str | None = None
    customer_id: str | None = None
    plan: str | None = None
    subscription: SubscriptionState | None = None
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)


class WebhookVerificationError(Exception):
    """The webhook's signature is missing, wrong or too old; nothing is processed (400)."""


class PaymentProviderError(Exception):
    """The payment provider refused a call or could not be reached (answered 502)."""


class PaymentProvider:
    """Base class of payment providers; override every method.

    Example (the built-in ``plugins/stripe`` is the complete one)::

        class MyPayments(PaymentProvider):
            signature_header = "My-Signature"

            def configured(self, ctx):
                return bool(ctx.config and ctx.config.secret_key)

            async def create_checkout(self, ctx, request):
                async with ctx.http.post(...) as response:
                    body = await response.json()
                return CheckoutSession(id=body["id"], url=body["url"])
    """

    #: the request header carrying the webhook signature
    signature_header: str = "payment-signature"

    def configured(self, ctx: PaymentContext) -> bool:
        raise NotImplementedError

    def price_configured(self, ctx: PaymentContext, plan: str) -> bool:
        """Whether ``plan`` can be bought (a price is set up for it)."""
        raise NotImplementedError

    async def create_checkout(self, ctx: PaymentContext, request: CheckoutRequest) -> CheckoutSession:
        raise NotImplementedError

    async def create_portal(self, ctx: PaymentContext, *, customer_id: str, return_url: str) -> str:
        """The URL of the provider's customer portal session."""
        raise NotImplementedError

    async def cancel_subscription(self, ctx: PaymentContext, *, subscription_id: str) -> SubscriptionState:
        """Cancel at the end of the current period."""
        raise NotImplementedError

    async def resume_subscription(self, ctx: PaymentContext, *, subscription_id: str) -> SubscriptionState:
        """Undo a cancellation at period end."""
        raise NotImplementedError

    def parse_webhook(self, ctx: PaymentContext, *, payload: bytes, signature: str | None, now: float | None = None) -> PaymentEvent:
        """Verify the raw ``payload`` against ``signature`` (raise :class:`WebhookVerificationError`)
        and read the event."""
        raise NotImplementedError
