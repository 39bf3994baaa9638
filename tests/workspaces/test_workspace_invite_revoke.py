"""Withdrawing an invite over HTTP: only the workspace's admins may, from their own workspace; the
withdrawn invite's link answers as an unknown invite and cannot be accepted; the audit trail names
who withdrew it; an accepted invite cannot be withdrawn."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key

BASE = "/connect/v1/workspaces"


async def _invite(client, workspace_id: str, headers, email: str) -> tuple[str, str]:
    """``(invite id, token)`` of a new invite of ``email``."""
    response = await client.post(f"{BASE}/{workspace_id}/invite", json={"email": email, "role": "manager"}, headers=headers)
    assert response.status == 201, await response.text()
    created = await response.json()
    return created["id"], created["inviteUrl"].rsplit("/", 1)[1]


@pytest.mark.both_databases
async def test_only_an_admin_of_the_workspace_withdraws_an_invite_and_its_link_stops_working(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    _, manager = await make_user(app, "max@example.test", organization_id=ws, role="manager")
    _, viewer = await make_user(app, "vic@example.test", organization_id=ws, role="viewer")
    other = await create_workspace_with_key(app)
    invite_id, token = await _invite(client, ws, admin, "dan@example.test")

    # attacks first: each leaves the invite usable
    for headers, status in ((viewer, 403), (manager, 403), ({}, 401), (other["headers"], 404)):
        refused = await client.delete(f"{BASE}/{ws}/invites/{invite_id}", headers=headers)
        assert refused.status == status, (status, await refused.text())
    from_elsewhere = await client.delete(f"{BASE}/{other['workspace_id']}/invites/{invite_id}", headers=other["headers"])
    assert from_elsewhere.status == 404  # the other workspace's admin, on its own path
    assert (await client.get(f"{BASE}/invite/validate/{token}")).status == 200

    withdrawn = await client.delete(f"{BASE}/{ws}/invites/{invite_id}", headers=admin)
    assert withdrawn.status == 200, await withdrawn.text()
    assert await withdrawn.json() == {"revoked": True, "inviteId": invite_id}
    assert (await client.get(f"{BASE}/invite/validate/{token}")).status == 404
    _, dan = await make_user(app, "dan@example.test")
    assert (await client.post(f"{BASE}/invite/accept/{token}", headers=dan)).status == 404
    assert (await client.delete(f"{BASE}/{ws}/invites/{invite_id}", headers=admin)).status == 404  # once

    events = (await (await client.get(f"{BASE}/{ws}/audit-events", headers=admin, params={"action": "invite.revoked"})).json())["data"]
    assert [(e["actorId"], e["targetId"], e["details"]) for e in events] == [(admin_id, invite_id, {"email": "dan@example.test", "role": "manager"})]


@pytest.mark.both_databases
async def test_an_accepted_invite_cannot_be_withdrawn(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    _, admin = await make_user(app, "ada@example.test", organization_id=ws, role="admin")
    invite_id, token = await _invite(client, ws, admin, "eve@example.test")
    _, eve = await make_user(app, "eve@example.test")
    assert (await client.post(f"{BASE}/invite/accept/{token}", headers=eve)).status == 201

    refused = await client.delete(f"{BASE}/{ws}/invites/{invite_id}", headers=admin)
    assert refused.status == 404 and (await refused.json())["message"] == "Invite not found"
    events = (await (await client.get(f"{BASE}/{ws}/audit-events", headers=admin, params={"action": "invite.revoked"})).json())["data"]
    assert events == []
