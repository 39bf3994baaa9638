"""The workspace's audit trail over HTTP: each administrative change made through the connect API
records one event naming who did it, a refused change records none, only the workspace's admins
read it (newest first, keyset pages, an ``action`` filter), and no event holds a secret."""

from __future__ import annotations

import json

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key

BASE = "/connect/v1/workspaces"


async def _events(client, workspace_id: str, headers, **params) -> list[dict]:
    response = await client.get(f"{BASE}/{workspace_id}/audit-events", headers=headers, params=params)
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


@pytest.mark.both_databases
async def test_each_change_through_the_api_records_one_event_naming_who_did_it(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    workspace = await create_workspace_with_key(app)
    ws, key_headers = workspace["workspace_id"], workspace["headers"]
    admin_id, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    bob_id, _ = await make_user(app, "bob@example.test", organization_id=ws, role="manager")
    carol_id, _ = await make_user(app, "carol@example.test", organization_id=ws, role="viewer")
    spare = await create_workspace_with_key(app)  # another workspace's key: not revocable from here
    other_key = (await (await client.get("/connect/v1/api-keys", headers=spare["headers"])).json())["data"][0]

    invited = await client.post(f"{BASE}/{ws}/invite", json={"email": "Dan@Example.test", "role": "manager"}, headers=admin)
    assert invited.status == 201, await invited.text()
    invite = await invited.json()
    assert (await client.patch(f"{BASE}/{ws}/members/{bob_id}", json={"role": "viewer"}, headers=admin)).status == 200
    assert (await client.patch(f"{BASE}/{ws}/members/{bob_id}", json={"role": "viewer"}, headers=admin)).status == 200  # no change: no event
    assert (await client.delete(f"{BASE}/{ws}/members/{carol_id}", headers=admin)).status == 200
    keys = (await (await client.get("/connect/v1/api-keys", headers=key_headers)).json())["data"]
    (key,) = keys
    assert (await client.delete(f"/connect/v1/api-keys/{other_key['id']}", headers=admin)).status == 404
    assert (await client.delete(f"/connect/v1/api-keys/{key['id']}", headers=key_headers)).status == 200  # a key revokes itself

    events = await _events(client, ws, admin)
    assert [e["action"] for e in events] == ["api_key.revoked", "member.removed", "member.role_changed", "invite.created"]
    revoked, removed, changed, created = events
    assert {k: revoked[k] for k in ("actorKind", "actorId", "actorLabel", "targetId", "details")} == {
        "actorKind": "api_key",
        "actorId": key["id"],
        "actorLabel": key["prefix"],
        "targetId": key["id"],
        "details": {"name": "test", "prefix": key["prefix"]},
    }
    user_actor = {"actorKind": "user", "actorId": admin_id, "actorLabel": "ada@example.test"}
    assert {k: removed[k] for k in (*user_actor, "targetId", "details")} == {
        **user_actor,
        "targetId": carol_id,
        "details": {"email": "carol@example.test", "role": "viewer"},
    }
    assert {k: changed[k] for k in (*user_actor, "targetId", "details")} == {
        **user_actor,
        "targetId": bob_id,
        "details": {"email": "bob@example.test", "from": "manager", "to": "viewer"},
    }
    assert {k: created[k] for k in (*user_actor, "targetId")} == {**user_actor, "targetId": invite["id"]}
    assert created["details"] == {"email": "dan@example.test", "role": "manager", "expiresAt": created["details"]["expiresAt"]}
    assert all(e["workspaceId"] == ws and e["createdAt"] for e in events)
    assert await _events(client, spare["workspace_id"], spare["headers"]) == [], "the other workspace's trail is its own"


@pytest.mark.both_databases
async def test_a_refused_change_records_nothing(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    bob_id, viewer = await make_user(app, "bob@example.test", organization_id=ws, role="viewer")
    _, manager = await make_user(app, "mia@example.test", organization_id=ws, role="manager")

    refusals = [
        await client.delete(f"{BASE}/{ws}/members/{admin_id}", headers=admin),  # the last admin
        await client.patch(f"{BASE}/{ws}/members/{admin_id}", json={"role": "viewer"}, headers=admin),
        await client.patch(f"{BASE}/{ws}/members/{bob_id}", json={"role": "owner"}, headers=admin),
        await client.delete(f"{BASE}/{ws}/members/not-a-member", headers=admin),
        await client.delete(f"{BASE}/{ws}/members/{admin_id}", headers=viewer),
        await client.patch(f"{BASE}/{ws}/members/{bob_id}", json={"role": "admin"}, headers=manager),
        await client.post(f"{BASE}/{ws}/invite", json={"email": "not an address"}, headers=admin),
        await client.post(f"{BASE}/{ws}/invite", json={"email": "bob@example.test"}, headers=admin),  # already a member
        await client.post(f"{BASE}/{ws}/invite", json={"email": "eve@example.test"}, headers=viewer),
        await client.delete("/connect/v1/api-keys/no-such-key", headers=admin),
    ]
    assert [r.status for r in refusals] == [409, 409, 400, 404, 403, 403, 400, 409, 403, 404]
    assert await _events(client, ws, admin) == []


@pytest.mark.both_databases
async def test_only_the_workspaces_admins_read_its_trail_page_by_page(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    _, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    _, viewer = await make_user(app, "vic@example.test", organization_id=ws, role="viewer")
    _, manager = await make_user(app, "mia@example.test", organization_id=ws, role="manager")
    rival = await create_workspace_with_key(app, name="Rival")
    _, rival_admin = await make_user(app, "rex@example.test", organization_id=rival["workspace_id"], role="admin")
    for n in range(5):
        assert (await client.post(f"{BASE}/{ws}/invite", json={"email": f"guest{n}@example.test"}, headers=admin)).status == 201
    assert (await client.post(f"{BASE}/{rival['workspace_id']}/invite", json={"email": "spy@example.test"}, headers=rival_admin)).status == 201
    url = f"{BASE}/{ws}/audit-events"

    for headers, status in ((viewer, 403), (manager, 403), (rival["headers"], 404), (rival_admin, 404), ({}, 401)):
        response = await client.get(url, headers=headers)
        body = await response.json()
        assert response.status == status, body
        assert body["statusCode"] == status and "guest" not in json.dumps(body)
    assert "workspace.admin" in (await (await client.get(url, headers=viewer)).json())["message"]

    seen, cursor = [], None
    while True:
        response = await client.get(url, headers=admin, params={"limit": "2", **({"cursor": cursor} if cursor else {})})
        body = await response.json()
        assert response.status == 200 and len(body["data"]) <= 2, body
        seen += body["data"]
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert [e["details"]["email"] for e in seen] == [f"guest{n}@example.test" for n in reversed(range(5))], "newest first, each once"
    assert len({e["id"] for e in seen}) == 5

    assert len(await _events(client, ws, admin, action="invite.created")) == 5
    assert await _events(client, ws, admin, action="member.removed") == []
    for params in ({"action": "member.exploded"}, {"cursor": "not-a-cursor"}, {"limit": "0"}):
        response = await client.get(url, headers=admin, params=params)
        assert response.status == 400, (params, await response.text())
        assert (await response.json())["statusCode"] == 400


@pytest.mark.both_databases
async def test_no_event_holds_a_secret(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    workspace = await create_workspace_with_key(app)
    ws = workspace["workspace_id"]
    _, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    invited = await client.post(f"{BASE}/{ws}/invite", json={"email": "dan@example.test"}, headers=admin)
    token = (await invited.json())["inviteUrl"].rsplit("/", 1)[-1]
    key = (await (await client.get("/connect/v1/api-keys", headers=workspace["headers"])).json())["data"][0]
    assert (await client.delete(f"/connect/v1/api-keys/{key['id']}", headers=admin)).status == 200

    text = await (await client.get(f"{BASE}/{ws}/audit-events", headers=admin)).text()
    assert len(json.loads(text)["data"]) == 2
    assert key["prefix"] in text
    for secret in (workspace["api_key"], workspace["api_key"][10:], token, admin["Authorization"].split()[1]):
        assert secret not in text


@pytest.mark.both_databases
async def test_events_older_than_the_retention_are_purged(aiohttp_client, make_app, make_user, database_url):
    from datetime import timedelta

    from patchbay.core.jobs.maintenance import purge
    from patchbay.core.timeutil import utcnow
    from patchbay.core.workspaces.audit import WorkspaceAuditEvent

    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    _, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    assert (await client.post(f"{BASE}/{ws}/invite", json={"email": "new@example.test"}, headers=admin)).status == 201
    async with app[SERVICES].db.transaction() as session:
        for days in (366, 400):
            old = WorkspaceAuditEvent(workspace_id=ws, actor_kind="system", action="invite.created", details={}, created_at=utcnow() - timedelta(days=days))
            session.add(old)
    assert len(await _events(client, ws, admin)) == 3
    assert (await purge(app[SERVICES]))["workspaceAuditEventsPurged"] == 2, "a year by default"
    assert [e["details"]["email"] for e in await _events(client, ws, admin)] == ["new@example.test"]
