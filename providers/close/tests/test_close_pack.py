"""The close pack on its own (``pytest providers/close``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceClose = pack_acceptance("close")
