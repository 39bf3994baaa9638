"""Stripe (the provider: its API's actions and triggers and its webhook scheme; billing is the
separate ``stripe_billing`` plugin)'s provider pack: its actions and triggers (``actions``), its
webhook verification (``webhooks``), with its tests beside them (``pytest providers/stripe``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import action_hooks, definitions_hook, templates_hook
from patchbay.providers.stripe import actions, templates
from patchbay.providers.stripe.webhooks import StripeWebhooks

NAME = "stripe"
PROVIDERS = ("stripe", "stripe-api-key")


register_providers = definitions_hook(PROVIDERS)
register_flow_templates = templates_hook(templates)
register_actions, register_triggers = action_hooks(PROVIDERS, actions)


@hookimpl
def register_webhooks(register):
    register(NAME, StripeWebhooks())
