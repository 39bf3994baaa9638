"""The zoho_crm pack on its own (``pytest providers/zoho_crm``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceZohoCrm = pack_acceptance("zoho-crm", pack="zoho_crm")
