"""The mailchimp pack on its own (``pytest providers/mailchimp``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceMailchimp = pack_acceptance("mailchimp")
