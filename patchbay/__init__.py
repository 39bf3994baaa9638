"""patchbay's public facade for plugin authors.

Everything a provider pack or plugin needs is importable from here; the rest of the package is
internal and may change between releases.
"""

from patchbay.core.billing.payments import (
    CheckoutRequest,
    CheckoutSession,
    PaymentContext,
    PaymentEvent,
    PaymentProvider,
    PaymentProviderError,
    SubscriptionState,
    WebhookVerificationError,
)
from patchbay.core.compliance.callbacks import DeletionCallbackError, DeletionContext
from patchbay.core.connections.auth import AuthContext, OAuthApp, ProviderAuth, ProviderAuthError, TokenSet
from patchbay.core.connections.client import ConnectionClient, ProviderResponse
from patchbay.core.flows.template_builders import action_step, flow_template
from patchbay.core.plugins.hookspecs import hookimpl
from patchbay.core.plugins.protocols import (
    AlertChannel,
    CrmDestination,
    CrmMapper,
    DeauthorizationCallback,
    DeletionCallback,
    FederatedLogin,
    ProxyCustomizer,
    StepType,
)
from patchbay.core.plugins.provider import CAPABILITIES, CATEGORIES, Provider, RetryHeaders
from patchbay.core.plugins.types import Action, RecordSource, Trigger
from patchbay.core.webhooks.protocol import InboundEvent, InboundRequest, LeadData, WebhookHandler, WebhookReply, hmac_sha256_hex, signatures_match

__all__ = [
    "Action",
    "action_step",
    "flow_template",
    "CAPABILITIES",
    "CATEGORIES",
    "Provider",
    "RecordSource",
    "RetryHeaders",
    "Trigger",
    "hookimpl",
    "InboundEvent",
    "InboundRequest",
    "LeadData",
    "WebhookHandler",
    "WebhookReply",
    "hmac_sha256_hex",
    "signatures_match",
    "CheckoutRequest",
    "CheckoutSession",
    "PaymentContext",
    "PaymentEvent",
    "PaymentProvider",
    "PaymentProviderError",
    "SubscriptionState",
    "WebhookVerificationError",
    "DeletionCallbackError",
    "DeletionContext",
    "AuthContext",
    "ConnectionClient",
    "OAuthApp",
    "ProviderAuth",
    "ProviderAuthError",
    "ProviderResponse",
    "TokenSet",
    "AlertChannel",
    "CrmDestination",
    "CrmMapper",
    "DeauthorizationCallback",
    "DeletionCallback",
    "FederatedLogin",
    "ProxyCustomizer",
    "StepType",
]
