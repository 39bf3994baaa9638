"""Google Sheets (provider ``google-sheet``)'s provider pack: its actions and triggers
(``actions``), with its tests beside them (``pytest providers/google_sheets``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers.google_sheets import actions

NAME = "google-sheet"
PROVIDERS = ("google-sheet",)


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
