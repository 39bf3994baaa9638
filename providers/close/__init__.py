"""Close's provider pack: its mapping onto the unified CRM model and the record sources built on it
(``crm``), with its tests beside them (``pytest providers/close``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers._shared.crm import record_source
from patchbay.providers.close.crm import CloseMapper

NAME = "close"
PROVIDERS = ("close",)
MAPPER = CloseMapper()


@hookimpl
def register_providers():
    return catalog.definitions(PROVIDERS)


@hookimpl
def register_crm_mappers(register):
    register(NAME, MAPPER)


@hookimpl
def register_record_sources(register):
    for resource in MAPPER.resources:
        register(NAME, record_source(MAPPER, resource))
