"""The pipedrive pack on its own (``pytest providers/pipedrive``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

from patchbay.testing import pack_acceptance

TestAcceptancePipedrive = pack_acceptance("pipedrive")
