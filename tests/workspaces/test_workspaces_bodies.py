"""The workspace routes read their bodies with models: a field of the wrong type answers 400 naming
it (a body that is not an object too, where it was once read as no body at all), and what they
answer follows the published models (a user's list carries their role, an API key's does not)."""

from __future__ import annotations

from patchbay.core.testing import create_workspace_with_key


async def test_bodies_of_the_wrong_type_are_400_naming_the_field(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, name="Typed")
    base = f"/connect/v1/workspaces/{ws['workspace_id']}"
    _, erin = await make_user(app, "erin@example.test")
    asked = await (await client.post("/connect/v1/workspaces/join/request", json={"workspaceId": ws["workspace_id"]}, headers=erin)).json()
    cases = [
        (f"{base}/shareable-link", {"role": 5}, ws["headers"], "role must be a string"),
        (f"{base}/shareable-link", {"expiresInHours": "12"}, ws["headers"], "expiresInHours must be an integer"),
        (f"{base}/shareable-link", {"expiresInHours": 0}, ws["headers"], "expiresInHours must be a positive integer"),
        (f"{base}/shareable-link", [], ws["headers"], "Request body must be a JSON object"),
        (f"{base}/join-requests/{asked['id']}/approve", {"role": ["admin"]}, ws["headers"], "role must be a string"),
        (f"{base}/join-requests/{asked['id']}/approve", ["manager"], ws["headers"], "Request body must be a JSON object"),
        (f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", {"token": 7}, erin, "token must be a string"),
        (f"{base}/invite", {"email": "x@example.test", "expiresInHours": "1"}, ws["headers"], "expiresInHours must be an integer"),
    ]
    for path, body, headers, message in cases:
        response = await client.post(path, json=body, headers=headers)
        assert response.status == 400 and message in (await response.json())["message"], (path, body, await response.text())
    listed = await (await client.get(f"{base}/join-requests", headers=ws["headers"])).json()
    assert listed["total"] == 1 and listed["data"][0]["status"] == "pending", "a refused approval decides nothing"


async def test_the_list_shows_a_users_role_and_not_an_api_keys(aiohttp_client, make_app, make_user):
    app = make_app()
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, name="Listed")
    by_key = await (await client.get("/connect/v1/workspaces", headers=ws["headers"])).json()
    assert by_key["total"] == 1 and "role" not in by_key["data"][0] and by_key["data"][0]["id"] == ws["workspace_id"]
    _, erin = await make_user(app, "erin@example.test")
    link = await (await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/shareable-link", json={"role": "manager"}, headers=ws["headers"])).json()
    joined = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": link["token"]}, headers=erin)
    assert joined.status == 201 and (await joined.json())["workspace"]["role"] == "manager"
    by_user = await (await client.get("/connect/v1/workspaces", headers=erin)).json()
    assert [(w["id"], w["role"]) for w in by_user["data"]] == [(ws["workspace_id"], "manager")]
