"""The airtable pack on its own (``pytest providers/airtable``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceAirtable = pack_acceptance("airtable")
TestAcceptanceAirtablePat = pack_acceptance("airtable-pat", pack="airtable")
