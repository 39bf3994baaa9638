"""The built-in actions and triggers of the main providers, one module per provider.

Each module names the providers it serves (``PROVIDERS``: a provider and its variants, such as an
API-key flavour) and offers ``actions()`` and ``triggers()``; this pack registers them through the
same hooks as any third-party pack. Actions call the provider through the connection client handed
to them, never anything else of patchbay.
"""

from __future__ import annotations

import importlib

from patchbay import hookimpl

MODULES = ("hubspot", "salesforce", "pipedrive", "slack", "google_sheets", "gmail", "notion", "airtable", "stripe", "mailchimp", "facebook")


def _modules():
    return [importlib.import_module(f"{__name__}.{name}") for name in MODULES]


@hookimpl
def register_actions(register):
    for module in _modules():
        for provider in module.PROVIDERS:
            for action in module.actions():
                register(provider, action)


@hookimpl
def register_triggers(register):
    for module in _modules():
        for provider in module.PROVIDERS:
            for trigger in module.triggers():
                register(provider, trigger)
