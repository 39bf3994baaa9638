"""Accounts (spec 4.1): CRUD of the tenant record with the operator's admin API key; a workspace's
own credential reads its record and renames it, but cannot change its plan or see others."""

from __future__ import annotations

from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.settings import AdminSettings
from patchbay.core.testing import create_workspace_with_key

OPERATOR = {"Authorization": "Bearer op-key-1"}


async def test_operator_crud(aiohttp_client, make_app):
    app = make_app(admin=AdminSettings(api_key="op-key-1"))
    client = await aiohttp_client(app)
    created = await client.post("/accounts", json={"name": "Globex", "plan": "starter", "externalId": "ext-1"}, headers=OPERATOR)
    assert created.status == 201
    account = await created.json()
    assert (account["name"], account["plan"], account["externalId"], account["created"]) == ("Globex", "starter", "ext-1", True)
    again = await (await client.post("/accounts", json={"name": "Globex 2", "externalId": "ext-1"}, headers=OPERATOR)).json()
    assert (again["id"], again["created"]) == (account["id"], False)
    assert (await client.post("/accounts", json={"name": "X", "plan": "gold"}, headers=OPERATOR)).status == 400

    listed = await (await client.get("/accounts?externalId=ext-1", headers=OPERATOR)).json()
    assert [a["id"] for a in listed["data"]] == [account["id"]] and listed["total"] == 1
    patched = await client.patch(f"/accounts/{account['id']}", json={"plan": "enterprise", "settings": {"region": "eu"}}, headers=OPERATOR)
    assert (await patched.json())["plan"] == "enterprise"
    shown = await (await client.get(f"/accounts/{account['id']}", headers=OPERATOR)).json()
    assert shown["settings"] == {"region": "eu"} and shown["memberCount"] == 0
    assert (await client.patch(f"/accounts/{account['id']}", json={"plan": "gold"}, headers=OPERATOR)).status == 400
    assert (await client.patch(f"/accounts/{account['id']}", json={"colour": "red"}, headers=OPERATOR)).status == 400

    assert (await client.delete(f"/accounts/{account['id']}", headers=OPERATOR)).status == 200
    assert (await client.get(f"/accounts/{account['id']}", headers=OPERATOR)).status == 404
    assert (await client.delete(f"/accounts/{account['id']}", headers=OPERATOR)).status == 404


async def test_workspace_credentials_and_no_operator(aiohttp_client, make_app):
    app = make_app(admin=AdminSettings(api_key="op-key-1"))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, name="Own")
    other = await create_workspace_with_key(app, name="Other")
    viewer = await create_workspace_with_key(app, name="Viewer", permissions=[p for p in PERMISSIONS if p.endswith(".view")])
    own = await client.get(f"/accounts/{ws['workspace_id']}", headers=ws["headers"])
    assert (await own.json())["name"] == "Own"
    assert (await client.get(f"/accounts/{other['workspace_id']}", headers=ws["headers"])).status == 404
    renamed = await client.patch(f"/accounts/{ws['workspace_id']}", json={"name": "Own Inc"}, headers=ws["headers"])
    assert (await renamed.json())["name"] == "Own Inc"
    upgrade = await client.patch(f"/accounts/{ws['workspace_id']}", json={"plan": "enterprise"}, headers=ws["headers"])
    assert (upgrade.status, (await upgrade.json())["message"]) == (403, "Only the operator can change plan")
    assert (await client.patch(f"/accounts/{viewer['workspace_id']}", json={"name": "V"}, headers=viewer["headers"])).status == 403
    assert (await client.get("/accounts", headers=ws["headers"])).status == 403
    assert (await client.post("/accounts", json={"name": "X"}, headers=ws["headers"])).status == 403
    assert (await client.delete(f"/accounts/{ws['workspace_id']}", headers=ws["headers"])).status == 403
    assert (await client.get("/accounts")).status == 401
    assert (await client.get("/accounts", headers={"x-api-key": "op-key-2"})).status == 403


async def test_accounts_closed_without_admin_key(client, workspace):
    assert (await client.get("/accounts", headers={"x-api-key": ""})).status == 401
    assert (await client.post("/accounts", json={"name": "X"}, headers={"Authorization": "Bearer anything"})).status == 403


async def test_account_bodies_of_the_wrong_type_are_400_naming_the_field(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(admin=AdminSettings(api_key="op-key-1")))
    account = await (await client.post("/accounts", json={"name": "Initech"}, headers=OPERATOR)).json()
    for method, path, body, message in (
        ("post", "/accounts", {"name": ["Initech"]}, "name must be a string"),
        ("post", "/accounts", {"plan": "starter"}, "name is required"),
        ("post", "/accounts", {"name": "I", "externalId": 7}, "externalId must be a string"),
        ("patch", f"/accounts/{account['id']}", {"settings": "eu"}, "settings must be an object"),
        ("patch", f"/accounts/{account['id']}", {"name": True}, "name must be a string"),
    ):
        response = await getattr(client, method)(path, json=body, headers=OPERATOR)
        assert response.status == 400 and message in (await response.json())["message"], (path, body)
