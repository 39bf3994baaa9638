"""The bodies the billing routes (``core.billing.routes``) read and answer: the models that validate
and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchbay.core.billing.models import Subscription
from patchbay.core.http.responses import response_model
from patchbay.core.timeutil import iso

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class CheckoutDto:
    """A paid plan whose price the payment provider has; the URLs default to the service's own."""

    plan: str
    successUrl: str | None = None
    cancelUrl: str | None = None


@dataclass
class PortalDto:
    returnUrl: str | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class BillingSubscription:
    """The workspace's subscription with the payment provider."""

    provider: str
    customerId: str | None
    subscriptionId: str | None
    plan: str | None
    status: str | None
    cancelAtPeriodEnd: bool
    currentPeriodEnd: str | None


def subscription_json(row: Subscription | None) -> dict[str, Any] | None:
    """A :class:`BillingSubscription`, or None without one."""
    if row is None:
        return None
    return {
        "provider": row.provider,
        "customerId": row.customer_id,
        "subscriptionId": row.subscription_id,
        "plan": row.plan,
        "status": row.status,
        "cancelAtPeriodEnd": row.cancel_at_period_end,
        "currentPeriodEnd": iso(row.current_period_end),
    }


@response_model
class BillingPlan:
    """The plan, its limit of every resource (null: unlimited), the subscription (null without
    one), the configured payment provider and the paid plans it sells."""

    plan: str
    limits: dict[str, int | None]
    subscription: BillingSubscription | None
    paymentProvider: str | None
    availablePlans: list[str]


@response_model
class ResourceUsage:
    """``period`` is ``month`` for a metered resource, ``total`` for a counted one."""

    used: int
    limit: int | None
    period: str


@response_model
class BillingUsage:
    """This month (``YYYY-MM``): the usage of every limited resource."""

    period: str
    plan: str
    usage: dict[str, ResourceUsage]


@response_model
class UsageMonth:
    period: str
    usage: dict[str, int]


@response_model
class UsageHistory:
    """Metered usage per month, newest first."""

    data: list[UsageMonth]


@response_model
class CheckoutSession:
    """The payment provider's checkout: send the customer to ``url``."""

    id: str
    url: str
    provider: str


@response_model
class PortalSession:
    url: str


@response_model
class WebhookReceipt:
    """``duplicate`` is true for an event applied before (a replay), which changes nothing."""

    received: bool
    duplicate: bool
