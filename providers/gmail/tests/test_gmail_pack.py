"""The gmail pack on its own (``pytest providers/gmail``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptanceGoogleMail = pack_acceptance("google-mail", pack="gmail")
