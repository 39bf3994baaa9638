"""The notion pack on its own (``pytest providers/notion``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceNotion = pack_acceptance("notion")
