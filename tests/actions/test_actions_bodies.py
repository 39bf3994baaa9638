"""The bodies of the action routes are read through their models (``core.actions.api_models``): a
value of the wrong type answers 400 naming the field, before the connection is looked up."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
async def api(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    return client, await create_workspace_with_key(client.server.app)


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/api/execute", {"connectionId": 5, "action": "hubspot.create_contact"}, "Validation failed: connectionId must be a string"),
        ("/api/execute", {"connectionId": "c-1", "action": 7}, "Validation failed: action must be a string"),
        ("/api/execute", {"connectionId": "c-1"}, "Validation failed: action is required"),
        ("/api/execute", {"connectionId": "c-1", "action": "create_contact", "inputs": "ada"}, "Validation failed: inputs must be an object"),
        ("/connect/v1/providers/hubspot/actions/create_contact", {"connectionId": 5, "inputs": {}}, "Validation failed: connectionId must be a string"),
        ("/connect/v1/providers/hubspot/actions/create_contact", {"connectionId": "c-1", "inputs": ["ada"]}, "Validation failed: inputs must be an object"),
    ],
)
async def test_a_malformed_body_answers_400_naming_the_field(api, path, body, message):
    client, ws = api
    answer = await client.post(path, json=body, headers=ws["headers"])
    assert answer.status == 400 and await answer.json() == {"statusCode": 400, "message": message}
