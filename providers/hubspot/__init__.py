"""HubSpot's provider pack: its actions and triggers (``actions``), its mapping onto the unified
CRM model and the record sources built on it (``crm``), its webhook verification (``webhooks``),
its CRM destination (``destination``) and its test fakes (``testing``), with its tests beside them
(``pytest providers/hubspot``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers.hubspot import actions
from patchbay.providers._shared.crm import record_source
from patchbay.providers.hubspot.crm import HubSpotMapper
from patchbay.providers.hubspot.destination import HubSpotDestination
from patchbay.providers.hubspot.webhooks import HubSpotWebhooks

NAME = "hubspot"
PROVIDERS = ("hubspot",)
MAPPER = HubSpotMapper()


@hookimpl
def register_providers():
    return catalog.definitions(PROVIDERS)


@hookimpl
def register_actions(register):
    for action in actions.actions():
        register(NAME, action)


@hookimpl
def register_triggers(register):
    for trigger in actions.triggers():
        register(NAME, trigger)


@hookimpl
def register_crm_mappers(register):
    register(NAME, MAPPER)


@hookimpl
def register_record_sources(register):
    for resource in MAPPER.resources:
        register(NAME, record_source(MAPPER, resource))


@hookimpl
def register_webhooks(register):
    register(NAME, HubSpotWebhooks())


@hookimpl
def register_crm_destinations(register):
    register(NAME, HubSpotDestination())
