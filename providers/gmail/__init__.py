"""Gmail (provider ``google-mail``)'s provider pack: its actions and triggers (``actions``), with
its tests beside them (``pytest providers/gmail``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay.providers._shared.pack import action_hooks, definitions_hook, templates_hook
from patchbay.providers.gmail import actions, templates

NAME = "google-mail"
PROVIDERS = ("google-mail",)


register_providers = definitions_hook(PROVIDERS)
register_flow_templates = templates_hook(templates)
register_actions, register_triggers = action_hooks(PROVIDERS, actions)
