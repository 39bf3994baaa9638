"""Join requests (approve, deny, duplicates), shareable links (used, expired, revoked, replaced),
public information, listing, and idempotent creation by externalId."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import AdminSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Membership, ShareableLink


async def _role(app, workspace_id, user_id):
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(Membership.role).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))


async def test_join_request_approve_and_deny(aiohttp_client, make_app, make_user):
    app = make_app()
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, name="Join Me")
    base = f"/connect/v1/workspaces/{ws['workspace_id']}"
    public = await (await client.get("/connect/v1/workspaces/public/join-me")).json()
    assert public["id"] == ws["workspace_id"] and public["name"] == "Join Me"
    assert (await client.get("/connect/v1/workspaces/public/nope")).status == 404

    erin_id, erin = await make_user(app, "erin@example.test")
    frank_id, frank = await make_user(app, "frank@example.test")
    asked = await client.post("/connect/v1/workspaces/join/request", json={"slug": "join-me", "message": "hi"}, headers=erin)
    assert asked.status == 201, await asked.text()
    erin_request = (await asked.json())["id"]
    duplicate = await client.post("/connect/v1/workspaces/join/request", json={"workspaceId": ws["workspace_id"]}, headers=erin)
    assert duplicate.status == 409
    frank_request = (await (await client.post("/connect/v1/workspaces/join/request", json={"workspaceId": ws["workspace_id"]}, headers=frank)).json())["id"]
    assert (await client.post("/connect/v1/workspaces/join/request", json={}, headers=frank)).status == 400
    assert (await client.post("/connect/v1/workspaces/join/request", json={"slug": "join-me"}, headers=ws["headers"])).status == 403

    listed = await (await client.get(f"{base}/join-requests", headers=ws["headers"])).json()
    assert [(r["email"], r["message"]) for r in listed["data"]] == [("erin@example.test", "hi"), ("frank@example.test", None)]

    approved = await client.post(f"{base}/join-requests/{erin_request}/approve", json={"role": "manager"}, headers=ws["headers"])
    assert approved.status == 201 and (await approved.json())["status"] == "approved"
    assert await _role(app, ws["workspace_id"], erin_id) == "manager"
    denied = await client.post(f"{base}/join-requests/{frank_request}/deny", headers=ws["headers"])
    assert (await denied.json())["status"] == "denied"
    assert await _role(app, ws["workspace_id"], frank_id) is None
    assert (await client.post(f"{base}/join-requests/{frank_request}/approve", headers=ws["headers"])).status == 409
    assert (await client.post(f"{base}/join-requests/unknown/approve", headers=ws["headers"])).status == 404
    assert (await (await client.get(f"{base}/join-requests", headers=ws["headers"])).json())["total"] == 0
    member_again = await client.post("/connect/v1/workspaces/join/request", json={"slug": "join-me"}, headers=erin)
    assert member_again.status == 409


@pytest.mark.both_databases
async def test_shareable_link_used_expired_revoked(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    base = f"/connect/v1/workspaces/{ws['workspace_id']}"
    link = await (await client.post(f"{base}/shareable-link", json={"role": "viewer"}, headers=ws["headers"])).json()
    assert link["token"] in link["url"]
    async with app[SERVICES].db.session() as session:
        assert link["token"] not in (await session.scalars(select(ShareableLink.token_digest))).all()

    gina_id, gina = await make_user(app, "gina@example.test")
    joined = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": link["token"]}, headers=gina)
    assert joined.status == 201 and (await joined.json())["joined"] is True
    assert await _role(app, ws["workspace_id"], gina_id) == "viewer"
    twice = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}?token={link['token']}", headers=gina)
    assert (await twice.json())["joined"] is False
    other = await create_workspace_with_key(app, name="Other")
    assert (await client.post(f"/connect/v1/workspaces/join/link/{other['workspace_id']}", json={"token": link["token"]}, headers=gina)).status == 404

    hank_id, hank = await make_user(app, "hank@example.test")
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ShareableLink).values(expires_at=utcnow() - timedelta(seconds=1)))
    expired = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": link["token"]}, headers=hank)
    assert (expired.status, (await expired.json())["message"]) == (410, "Shareable link has expired")

    fresh = await (await client.post(f"{base}/shareable-link", headers=ws["headers"])).json()
    replaced = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": link["token"]}, headers=hank)
    assert (replaced.status, (await replaced.json())["message"]) == (410, "Shareable link has been revoked")
    assert (await client.delete(f"{base}/shareable-link", headers=ws["headers"])).status == 200
    revoked = await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": fresh["token"]}, headers=hank)
    assert revoked.status == 410
    assert await _role(app, ws["workspace_id"], hank_id) is None
    assert (await client.delete(f"{base}/shareable-link", headers=ws["headers"])).status == 404


async def test_create_idempotent_by_external_id_and_list(aiohttp_client, make_app, make_user):
    app = make_app(admin=AdminSettings(api_key="operator-secret"))
    client = await aiohttp_client(app)
    owner_id, owner = await make_user(app, "owner@example.test")
    operator = {"x-api-key": "operator-secret"}
    body = {"name": "Tenant One", "externalId": "crm-42", "plan": "starter", "ownerEmail": "owner@example.test"}
    first = await client.post("/connect/v1/workspaces", json=body, headers=operator)
    assert first.status == 201, await first.text()
    created = await first.json()
    assert created["created"] is True and created["plan"] == "starter" and created["externalId"] == "crm-42"
    second = await (await client.post("/connect/v1/workspaces", json={**body, "name": "Renamed"}, headers=operator)).json()
    assert (second["id"], second["created"], second["name"]) == (created["id"], False, "Tenant One")
    assert await _role(app, created["id"], owner_id) == "admin"

    assert (await client.post("/connect/v1/workspaces", json=body, headers={"x-api-key": "wrong"})).status == 401
    ws = await create_workspace_with_key(app, name="Keyed")
    assert (await client.post("/connect/v1/workspaces", json=body, headers=ws["headers"])).status == 400  # plan: the operator's
    assert (await client.post("/connect/v1/workspaces", json={"name": "Mine", "plan": "enterprise"}, headers=owner)).status == 400
    own = await client.post("/connect/v1/workspaces", json={"name": "Mine"}, headers=owner)
    assert own.status == 201

    mine = await (await client.get("/connect/v1/workspaces", headers=owner)).json()
    assert sorted((w["name"], w["role"]) for w in mine["data"]) == [("Mine", "admin"), ("Tenant One", "admin")]
    keyed = await (await client.get("/connect/v1/workspaces", headers=ws["headers"])).json()
    assert [w["id"] for w in keyed["data"]] == [ws["workspace_id"]]
    assert (await client.get("/connect/v1/workspaces")).status == 401
