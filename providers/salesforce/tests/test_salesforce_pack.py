"""The salesforce pack on its own (``pytest providers/salesforce``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceSalesforce = pack_acceptance("salesforce")
TestAcceptanceSalesforceSandbox = pack_acceptance("salesforce-sandbox", pack="salesforce")
