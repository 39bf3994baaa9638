"""patchbay's public test kit for patchbay itself and for provider packs.

Importable by pack authors (``from patchbay.testing import ...``) with the same compatibility promise
as ``patchbay`` itself: local servers standing in for providers and receivers, a connection stored
as the connect flow stores it, an authenticated workspace of an app, and for unit tests a scripted
connection client (``FakeClient``), the objects a pack registers (``registered``) and a sample lead.
"""

from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.testing.clients import ClientCall, FakeClient, registered, sample_lead
from patchbay.testing.connections import add_connection
from patchbay.testing.fakes import FakeProviderAPI, RecordedRequest
from patchbay.testing.servers import LocalServer, Receiver


def pack_acceptance(provider_name: str, **options) -> type:
    """The pack acceptance suite as a test class (see ``patchbay.testing.acceptance``)."""
    from patchbay.testing.acceptance import pack_acceptance as build

    return build(provider_name, **options)


__all__ = [
    "ClientCall",
    "FakeClient",
    "FakeProviderAPI",
    "LocalServer",
    "Receiver",
    "RecordedRequest",
    "add_connection",
    "create_workspace_with_key",
    "pack_acceptance",
    "registered",
    "sample_lead",
    "sign_access_token",
]
