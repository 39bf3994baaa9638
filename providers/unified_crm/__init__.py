"""Unified CRM support for HubSpot, Salesforce, Pipedrive, Zoho CRM and Close: one mapper module per
CRM (``register_crm_mappers``), and record sources (``register_record_sources``) that let the
data-sync job ingest each CRM's contacts, companies and deals, in the unified shape, as records.

The provider definitions themselves come from the catalog pack; a CRM that is not installed simply
does not show in ``/api/unified/crm/providers``.
"""

from __future__ import annotations

from patchbay import RecordSource, hookimpl
from patchbay.providers.unified_crm.close import CloseMapper
from patchbay.providers.unified_crm.hubspot import HubSpotMapper
from patchbay.providers.unified_crm.pipedrive import PipedriveMapper
from patchbay.providers.unified_crm.salesforce import SalesforceMapper
from patchbay.providers.unified_crm.zoho_crm import ZohoCrmMapper

MAPPERS = {
    "hubspot": HubSpotMapper(),
    "salesforce": SalesforceMapper(),
    "pipedrive": PipedriveMapper(),
    "zoho-crm": ZohoCrmMapper(),
    "close": CloseMapper(),
}
SYNC_PAGE_SIZE = 100


def record_source(mapper, resource: str) -> RecordSource:
    """A record source reading one unified resource page by page; the cursor is the CRM's own."""

    async def fetch(client, cursor):
        return await mapper.list(client, resource, SYNC_PAGE_SIZE, cursor)

    return RecordSource(resource_type=resource, fetch=fetch)


@hookimpl
def register_crm_mappers(register):
    for name, mapper in MAPPERS.items():
        register(name, mapper)


@hookimpl
def register_record_sources(register):
    for name, mapper in MAPPERS.items():
        for resource in mapper.resources:
            register(name, record_source(mapper, resource))
