"""Close's provider pack: its mapping onto the unified CRM model and the record sources built on it
(``crm``), with its tests beside them (``pytest providers/close``).

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to
leave them out of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay.providers._shared.pack import crm_hooks, definitions_hook
from patchbay.providers.close.crm import CloseMapper

NAME = "close"
PROVIDERS = ("close",)
MAPPER = CloseMapper()


register_providers = definitions_hook(PROVIDERS)
register_crm_mappers, register_record_sources = crm_hooks(NAME, MAPPER)
