"""Salesforce's provider pack: its actions and triggers (``actions``), its mapping onto the unified
CRM model and the record sources built on it (``crm``), its authentication (``auth``), its CRM
destination (``destination``), with its tests beside them (``pytest providers/salesforce``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import action_hooks, crm_hooks, definitions_hook, templates_hook
from patchbay.providers.salesforce import actions, templates
from patchbay.providers.salesforce.auth import SalesforceAuth
from patchbay.providers.salesforce.crm import SalesforceMapper
from patchbay.providers.salesforce.destination import SalesforceDestination

NAME = "salesforce"
PROVIDERS = ("salesforce", "salesforce-sandbox")
MAPPER = SalesforceMapper()


register_providers = definitions_hook(PROVIDERS)
register_flow_templates = templates_hook(templates)
register_actions, register_triggers = action_hooks(PROVIDERS, actions)


@hookimpl
def register_auth(register):
    register(NAME, SalesforceAuth())


register_crm_mappers, register_record_sources = crm_hooks(NAME, MAPPER)


@hookimpl
def register_crm_destinations(register):
    register(NAME, SalesforceDestination())
