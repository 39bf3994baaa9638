"""Mailchimp's provider pack: its actions and triggers (``actions``), with its tests beside them
(``pytest providers/mailchimp``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers.mailchimp import actions

NAME = "mailchimp"
PROVIDERS = ("mailchimp",)


@hookimpl
def register_providers():
    return catalog.definitions(PROVIDERS)


@hookimpl
def register_actions(register):
    for provider in PROVIDERS:
        for action in actions.actions():
            register(provider, action)


@hookimpl
def register_triggers(register):
    for provider in PROVIDERS:
        for trigger in actions.triggers():
            register(provider, trigger)
