"""Pipedrive's provider pack: its actions and triggers (``actions``), its mapping onto the unified
CRM model and the record sources built on it (``crm``), its CRM destination (``destination``), with
its tests beside them (``pytest providers/pipedrive``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers._shared.crm import record_source
from patchbay.providers.pipedrive import actions
from patchbay.providers.pipedrive.crm import PipedriveMapper
from patchbay.providers.pipedrive.destination import PipedriveDestination

NAME = "pipedrive"
PROVIDERS = ("pipedrive",)
MAPPER = PipedriveMapper()


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


@hookimpl
def register_crm_mappers(register):
    register(NAME, MAPPER)


@hookimpl
def register_record_sources(register):
    for resource in MAPPER.resources:
        register(NAME, record_source(MAPPER, resource))


@hookimpl
def register_crm_destinations(register):
    register(NAME, PipedriveDestination())
