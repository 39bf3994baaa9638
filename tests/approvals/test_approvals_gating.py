"""Approval gating end to end through the service the connect routes call: a member's connect to a
gated provider (by name or category) becomes a pending request with its credentials encrypted; an
approver's approve makes the connection, deny refuses it; decisions record who and when."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.models import ApprovalRequest
from patchbay.core.approvals.service import gate_connect
from patchbay.core.connections.models import Connection
from patchbay.core.security.auth import Principal
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member


class _Pack:
    @hookimpl
    def register_providers(self):
        return [
            Provider(name="gatedcrm", display_name="Gated CRM", category="crm", auth_mode="api_key", api_base_url="http://127.0.0.1:9/api"),
            Provider(name="notes", display_name="Notes", category="productivity", auth_mode="api_key", api_base_url="http://127.0.0.1:9/api"),
        ]


async def _member(app, workspace_id, address, role):
    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email=address, password=None)
        await add_member(session, workspace_id=workspace_id, user_id=user.id, role=role)
    permissions = sorted(ROLE_PERMISSIONS[role])
    token = await sign_access_token(app, {"sub": user.id, "client_id": "console", "organization_id": workspace_id, "permissions": permissions})
    principal = Principal("access_token", workspace_id, frozenset(permissions), subject=user.id, client_id="console")
    return user.id, principal, {"Authorization": f"Bearer {token}"}


async def _gate(app, workspace_id, provider, principal, payload):
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        return await gate_connect(app[SERVICES], session, workspace_id=workspace_id, provider=provider, principal=principal, payload=payload)


@pytest.mark.both_databases
async def test_gated_connect_approved_and_denied(aiohttp_client, make_app, database_url):
    app = make_app(plugins=[_Pack()], database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    wid = ws["workspace_id"]
    _, manager, manager_headers = await _member(app, wid, "manager@example.test", "manager")
    admin_id, admin, admin_headers = await _member(app, wid, "admin@example.test", "admin")
    payload = {"credentials": {"apiKey": "secret-api-key-123"}, "metadata": {"label": "main"}}

    assert await _gate(app, wid, "gatedcrm", manager, payload) is None  # no policy yet
    policy = await client.patch("/connect/v1/approvals/policy", json={"enabled": True, "categories": ["crm"]}, headers=ws["headers"])
    assert policy.status == 200 and (await policy.json())["approverRoles"] == ["admin"]
    assert (await client.patch("/connect/v1/approvals/policy", json={"approverRoles": ["owner"]}, headers=ws["headers"])).status == 400

    assert await _gate(app, wid, "notes", manager, payload) is None  # another category
    assert await _gate(app, wid, "gatedcrm", admin, payload) is None  # approvers are not gated
    request_id = await _gate(app, wid, "gatedcrm", manager, payload)
    assert request_id
    async with app[SERVICES].db.session() as session:
        row = await session.get(ApprovalRequest, request_id)
        assert row.credentials and "secret-api-key-123" not in row.credentials
        assert await session.scalar(select(Connection.id)) is None

    pending = await (await client.get("/connect/v1/approvals/pending", headers=manager_headers)).json()
    assert [(r["id"], r["status"], r["provider"], r["metadata"]) for r in pending["data"]] == [(request_id, "pending", "gatedcrm", {"label": "main"})]
    refused = await client.post(f"/connect/v1/approvals/{request_id}/approve", headers=manager_headers)
    assert refused.status == 403

    approved = await client.post(f"/connect/v1/approvals/{request_id}/approve", json={"note": "ok"}, headers=admin_headers)
    assert approved.status == 201, await approved.text()
    decision = await approved.json()
    assert decision["status"] == "approved" and decision["decidedBy"] == admin_id and decision["decidedAt"] and decision["decisionNote"] == "ok"
    async with app[SERVICES].db.session(tenant=wid) as session:
        connection = await session.get(Connection, decision["connectionId"])
        assert connection.provider == "gatedcrm" and connection.status == "connected"
        assert (await session.get(ApprovalRequest, request_id)).credentials is None
    again = await client.post(f"/connect/v1/approvals/{request_id}/approve", headers=admin_headers)
    assert again.status == 409

    second = await _gate(app, wid, "gatedcrm", manager, {"credentials": {"apiKey": "another"}})
    denied = await client.post(f"/connect/v1/approvals/{second}/deny", headers=ws["headers"])
    assert denied.status == 201 and (await denied.json())["status"] == "denied"
    async with app[SERVICES].db.session(tenant=wid) as session:
        assert len((await session.scalars(select(Connection))).all()) == 1
    listed = await (await client.get("/connect/v1/approvals", headers=ws["headers"])).json()
    assert {(r["id"], r["status"]) for r in listed["data"]} == {(request_id, "approved"), (second, "denied")}
    assert (await (await client.get("/connect/v1/approvals/pending", headers=ws["headers"])).json())["total"] == 0

    other = await create_workspace_with_key(app, name="Other")
    assert (await client.get(f"/connect/v1/approvals/{request_id}", headers=other["headers"])).status == 404
    assert (await client.post(f"/connect/v1/approvals/{second}/approve", headers=other["headers"])).status == 404


async def test_gating_by_provider_name_and_oauth_approval(aiohttp_client, make_app):
    app = make_app(plugins=[_Pack()])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    wid = ws["workspace_id"]
    _, manager, _ = await _member(app, wid, "m@example.test", "manager")
    viewer_id, viewer, _ = await _member(app, wid, "v@example.test", "viewer")
    await client.patch("/connect/v1/approvals/policy", json={"enabled": True, "providers": ["notes"], "approverUserIds": [viewer_id]}, headers=ws["headers"])
    assert await _gate(app, wid, "gatedcrm", manager, {}) is None
    request_id = await _gate(app, wid, "notes", manager, {})  # an OAuth connect: no credentials
    assert request_id
    assert (await (await client.get(f"/connect/v1/approvals/{request_id}", headers=ws["headers"])).json())["kind"] == "oauth"
    assert await _gate(app, wid, "notes", viewer, {}) is not None  # named, but without approvals.write
    approved = await client.post(f"/connect/v1/approvals/{request_id}/approve", headers=ws["headers"])
    assert (await approved.json())["status"] == "approved"
    assert await _gate(app, wid, "notes", manager, {}) is None  # the approved request is used once
    assert (await (await client.get(f"/connect/v1/approvals/{request_id}", headers=ws["headers"])).json())["status"] == "completed"
    assert await _gate(app, wid, "notes", manager, {}) is not None


async def test_connect_route_is_gated_end_to_end(aiohttp_client, make_app):
    app = make_app(plugins=[_Pack()])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    wid = ws["workspace_id"]
    _, _, manager_headers = await _member(app, wid, "m@example.test", "manager")
    _, _, admin_headers = await _member(app, wid, "a@example.test", "admin")
    await client.patch("/connect/v1/approvals/policy", json={"enabled": True, "providers": ["gatedcrm"]}, headers=admin_headers)

    held = await client.post("/connect/v1/providers/gatedcrm/connect", json={"credentials": {"apiKey": "k-1"}}, headers=manager_headers)
    assert held.status == 202, await held.text()
    approval_id = (await held.json())["approvalId"]
    status = await (await client.get("/connect/v1/providers/gatedcrm/status", headers=manager_headers)).json()
    assert status["status"] == "not_connected"
    approved = await client.post(f"/connect/v1/approvals/{approval_id}/approve", headers=admin_headers)
    assert approved.status == 201
    status = await (await client.get("/connect/v1/providers/gatedcrm/status", headers=manager_headers)).json()
    assert (status["status"], status["connectionId"]) == ("connected", (await approved.json())["connectionId"])
    direct = await client.post("/connect/v1/providers/notes/connect", json={"credentials": {"apiKey": "k-2"}}, headers=manager_headers)
    assert direct.status == 201


async def test_interrupted_decision_can_be_taken_again(aiohttp_client, make_app):
    from datetime import timedelta

    from sqlalchemy import update

    from patchbay.core.timeutil import utcnow

    app = make_app(plugins=[_Pack()])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    _, manager, _ = await _member(app, ws["workspace_id"], "m@example.test", "manager")
    await client.patch("/connect/v1/approvals/policy", json={"enabled": True, "providers": ["notes"]}, headers=ws["headers"])
    request_id = await _gate(app, ws["workspace_id"], "notes", manager, {"credentials": {"apiKey": "k"}})
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ApprovalRequest).values(status="approving", updated_at=utcnow()))
    assert (await client.post(f"/connect/v1/approvals/{request_id}/deny", headers=ws["headers"])).status == 409
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ApprovalRequest).values(updated_at=utcnow() - timedelta(minutes=10)))
    denied = await client.post(f"/connect/v1/approvals/{request_id}/deny", headers=ws["headers"])
    assert (denied.status, (await denied.json())["status"]) == (201, "denied")
