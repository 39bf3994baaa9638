"""Zoho CRM's provider pack: its mapping onto the unified CRM model and the record sources built on
it (``crm``), its CRM destination (``destination``), with its tests beside them (``pytest
providers/zoho_crm``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import crm_hooks, definitions_hook
from patchbay.providers.zoho_crm.crm import ZohoCrmMapper
from patchbay.providers.zoho_crm.destination import ZohoCrmDestination

NAME = "zoho-crm"
PROVIDERS = ("zoho-crm",)
MAPPER = ZohoCrmMapper()


register_providers = definitions_hook(PROVIDERS)
register_crm_mappers, register_record_sources = crm_hooks(NAME, MAPPER)


@hookimpl
def register_crm_destinations(register):
    register(NAME, ZohoCrmDestination())
