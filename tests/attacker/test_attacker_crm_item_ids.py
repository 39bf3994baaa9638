"""Attacks on the unified CRM's item ids: a key holding only ``connections.view`` asks for an item
whose id is a path (``..%2F..%2Fv1%2FusersX%3Fdelete%3Dall%23``), hoping the CRM receives another
path (and query) under the workspace's stored token. A local fake CRM records every request."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from aiohttp import web
from yarl import URL

from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import LocalServer, add_connection

# provider -> (path prefix on the fake, where the mapper reads one contact, what it adds after the id)
CRMS = {
    "hubspot": ("/hubspot", "/hubspot/crm/v3/objects/contacts/", ""),
    "pipedrive": ("/pipedrive", "/pipedrive/v1/persons/", ""),
    "zoho-crm": ("/zoho", "/zoho/crm/v2/Contacts/", ""),
    "close": ("/close", "/close/v1/contact/", "/"),
}
ESCAPING_ID = "../../v1/usersX?delete=all#"
ESCAPING_PATH = "..%2F..%2Fv1%2FusersX%3Fdelete%3Dall%23"


class RecordingCrm(LocalServer):
    """Answers 404 to everything and records the raw path and query of every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.raw_path.split("?", 1)[0], dict(request.query)))
        return web.json_response({"error": "not found"}, status=404)


@pytest.fixture
async def viewer(aiohttp_client, make_app):
    """A workspace with a connection of each CRM (on the recording fake, ``viewer.fake``), and a key
    that may only view connections."""
    fake = await RecordingCrm().start()
    app = make_app(providers={name: {"api_base_url": fake.url + prefix} for name, (prefix, _, _) in CRMS.items()})
    client = await aiohttp_client(app)
    workspace = await create_workspace_with_key(app, plan="enterprise", permissions=["connections.view"])
    client.headers = workspace["headers"]
    client.connections = {name: await add_connection(app, workspace["workspace_id"], name, credentials={"access_token": "stored"}) for name in CRMS}
    client.fake = fake
    yield client
    await fake.close()


@pytest.mark.parametrize("crm", sorted(CRMS))
async def test_an_item_id_reaches_the_crm_as_one_encoded_segment(viewer, crm):
    response = await viewer.get(f"/api/unified/crm/contacts/{ESCAPING_PATH}", params={"connectionId": viewer.connections[crm]}, headers=viewer.headers)

    assert response.status == 404 and set(await response.json()) == {"statusCode", "message"}
    _, intended, suffix = CRMS[crm]
    [(path, query)] = viewer.fake.requests
    assert path.startswith(intended) and path.endswith(suffix), path
    segment = path[len(intended) : len(path) - len(suffix)]
    assert "/" not in segment and unquote(segment) == ESCAPING_ID
    assert "delete" not in query


@pytest.mark.parametrize("dots", ["..", "%2E%2E", ".", "%2e"])
async def test_a_dot_segment_id_is_refused_before_the_crm_is_called(viewer, dots):
    # sent as typed (an HTTP client would resolve the dots before sending)
    target = URL(f"{viewer.make_url('/api/unified/crm/contacts/')}{dots}?connectionId={viewer.connections['hubspot']}", encoded=True)
    response = await viewer.session.get(target, headers=viewer.headers)

    body = await response.json()
    assert response.status == 400 and set(body) == {"statusCode", "message"}, body
    assert viewer.fake.requests == []
