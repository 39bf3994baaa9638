"""The bodies of the lead and CRM push routes are read through their models
(``core.leads.api_models``, ``core.crm_push.api_models``): a value of the wrong type answers 400
naming the field, on SQLite and PostgreSQL, before anything is looked up."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
async def api(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url))
    return client, await create_workspace_with_key(client.server.app)


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/leads/import/{ws}", {"connectionId": 5}, "Validation failed: connectionId must be a string"),
        ("/leads/import/{ws}", {"provider": ["facebook"]}, "Validation failed: provider must be a string"),
        ("/leads/import/{ws}", [], "Request body must be a JSON object"),
        ("/crm/push-batch/{ws}", {"leadIds": [1]}, "Validation failed: leadIds[0] must be a string"),
        ("/crm/push-batch/{ws}", {"leadIds": "lead-1"}, "Validation failed: leadIds must be a list of lead ids"),
        ("/crm/push-batch/{ws}", {"crmSyncStatus": "lost"}, "Validation failed: crmSyncStatus[0] must be one of none, pending, synced, failed"),
        ("/crm/push-batch/{ws}", {"crmSyncStatus": ["failed", 3]}, "Validation failed: crmSyncStatus[1] must be one of none, pending, synced, failed"),
    ],
)
async def test_a_malformed_body_answers_400_naming_the_field(api, path, body, message):
    client, ws = api
    answer = await client.post(path.format(ws=ws["workspace_id"]), json=body, headers=ws["headers"])
    assert answer.status == 400 and await answer.json() == {"statusCode": 400, "message": message}


async def test_a_well_formed_body_goes_on_to_the_connections(api):
    client, ws = api
    started = await client.post(f"/leads/import/{ws['workspace_id']}", json={"connectionId": "nope"}, headers=ws["headers"])
    assert started.status == 404  # the body was read; the connection it names does not exist
    pushed = await client.post(f"/crm/push-batch/{ws['workspace_id']}", json={"crmSyncStatus": "failed"}, headers=ws["headers"])
    assert (await pushed.json())["message"] == "No CRM destination is connected"  # one status as a string is read
