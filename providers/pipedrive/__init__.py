"""Pipedrive's provider pack: its actions and triggers (``actions``), its mapping onto the unified
CRM model and the record sources built on it (``crm``), its CRM destination (``destination``), with
its tests beside them (``pytest providers/pipedrive``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import action_hooks, crm_hooks, definitions_hook, templates_hook
from patchbay.providers.pipedrive import actions, templates
from patchbay.providers.pipedrive.crm import PipedriveMapper
from patchbay.providers.pipedrive.destination import PipedriveDestination

NAME = "pipedrive"
PROVIDERS = ("pipedrive",)
MAPPER = PipedriveMapper()


register_providers = definitions_hook(PROVIDERS)
register_flow_templates = templates_hook(templates)
register_actions, register_triggers = action_hooks(PROVIDERS, actions)
register_crm_mappers, register_record_sources = crm_hooks(NAME, MAPPER)


@hookimpl
def register_crm_destinations(register):
    register(NAME, PipedriveDestination())
