"""The google_sheets pack on its own (``pytest providers/google_sheets``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceGoogleSheet = pack_acceptance("google-sheet", pack="google_sheets")
