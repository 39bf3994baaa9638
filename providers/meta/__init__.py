"""Meta's provider pack for the provider named ``facebook`` (Meta Lead Ads): its webhook
verification, routing and lead reading (``webhooks``), its long-lived-token login (``auth``), its
action and ``leadgen`` trigger (``actions``) and its test fakes (``testing``, ``fixtures``), with
its tests beside them (``pytest providers/meta``); and Meta's data deletion callback
(``deletion``: its ``signed_request`` verified under ``[meta] app_secret``, and which federated
identities it names).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import action_hooks, definitions_hook, templates_hook
from patchbay.providers.meta import actions, templates
from patchbay.providers.meta.auth import FacebookAuth
from patchbay.providers.meta.deletion import SOURCE, MetaDeauthorization, MetaDeletionCallback, MetaSettings
from patchbay.providers.meta.webhooks import PROVIDER, MetaWebhooks

PROVIDERS = ("facebook",)
#: the identity-provider names (``[federation.<name>]``) whose users Meta's data deletion callback names
DELETION_IDENTITY_PROVIDERS = ("facebook", "meta")


register_providers = definitions_hook(PROVIDERS)
register_flow_templates = templates_hook(templates)


@hookimpl
def register_webhooks(register):
    register(PROVIDER, MetaWebhooks())


@hookimpl
def register_auth(register):
    register(PROVIDER, FacebookAuth())


register_actions, register_triggers = action_hooks(PROVIDERS, actions)


@hookimpl
def register_deauthorization_callbacks(register):
    register(PROVIDER, MetaDeauthorization())


@hookimpl
def register_deletion_identities(register):
    register(SOURCE, DELETION_IDENTITY_PROVIDERS)


@hookimpl
def register_deletion_callbacks(register):
    register(SOURCE, MetaDeletionCallback())


@hookimpl
def register_settings(register):
    register(SOURCE, MetaSettings)
