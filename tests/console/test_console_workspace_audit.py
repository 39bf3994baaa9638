"""The settings' Audit tab and the changes made in the console: an API key made and revoked, a
role changed, a member removed and an invite made by a signed-in admin are recorded under their
email, never with the key; the admin sees the tab, a viewer or a manager neither the tab nor the
page."""

from __future__ import annotations

import pytest
from aiohttp import ClientSession

from tests.console.conftest import api_key_headers, console_get, console_post

pytestmark = pytest.mark.both_databases


@pytest.fixture
def console_settings(database_url):
    return {"database_url": database_url}


async def test_an_admins_console_changes_are_in_the_audit_tab(make_person, sign_in, console_server):
    admin = await make_person("admin")
    bob = await make_person("manager", admin.workspace_id)
    carol = await make_person("viewer", admin.workspace_id)
    http = await sign_in(admin)
    settings = f"/console/w/{admin.workspace_id}/settings"

    status, page, _ = await console_post(http, f"{settings}/keys", {"name": "ci deploys"}, token_from=f"{settings}/keys")
    assert status == 200, page
    key = page.split('id="new-key">', 1)[1].split("<", 1)[0]
    headers = await api_key_headers(console_server, admin.workspace_id)
    async with ClientSession() as api, api.get(f"{console_server.base}/connect/v1/api-keys", headers=headers) as response:
        made = next(k for k in (await response.json())["data"] if k["name"] == "ci deploys")
    assert (await console_post(http, f"{settings}/keys/{made['id']}/revoke", token_from=f"{settings}/keys"))[0] == 303
    assert (await console_post(http, f"{settings}/members/{bob.user_id}/role", {"role": "viewer"}, token_from=f"{settings}/members"))[0] == 303
    assert (await console_post(http, f"{settings}/members/{carol.user_id}/remove", token_from=f"{settings}/members"))[0] == 303
    assert (await console_post(http, f"{settings}/members/invite", {"email": "dan@example.com", "role": "viewer"}, token_from=f"{settings}/members"))[0] == 200

    url = f"{console_server.base}/connect/v1/workspaces/{admin.workspace_id}/audit-events"
    async with ClientSession() as api, api.get(url, headers=headers) as response:
        text = await response.text()
        events = (await response.json())["data"]
    assert [e["action"] for e in events] == ["invite.created", "member.removed", "member.role_changed", "api_key.revoked", "api_key.created"]
    assert {(e["actorKind"], e["actorId"], e["actorLabel"]) for e in events} == {("user", admin.user_id, admin.email)}
    assert [e["targetId"] for e in events[1:]] == [carol.user_id, bob.user_id, made["id"], made["id"]]
    assert events[4]["details"]["prefix"] == key[:10] and key not in text and key[10:] not in text

    status, page = await console_get(http, f"{settings}/audit")
    assert status == 200 and 'href="/console/w/' in page and ">Audit<" in page
    for shown in ("api_key.created", "member.role_changed", "manager → viewer", carol.email, "dan@example.com", key[:10]):
        assert shown in page, shown
    assert key not in page


@pytest.mark.parametrize("role", ["viewer", "manager"])
async def test_only_an_admin_sees_the_audit_tab(make_person, sign_in, role):
    person = await make_person(role)
    http = await sign_in(person)
    settings = f"/console/w/{person.workspace_id}/settings"
    assert (await console_get(http, f"{settings}/audit"))[0] == 403
    status, page = await console_get(http, f"{settings}/approvals")
    assert status == 200 and "settings/audit" not in page


async def test_an_admin_withdraws_an_open_invite_and_a_manager_cannot(make_person, sign_in, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    http = await sign_in(admin)
    settings = f"/console/w/{admin.workspace_id}/settings"
    status, page, _ = await console_post(http, f"{settings}/members/invite", {"email": "dan@example.com", "role": "viewer"}, token_from=f"{settings}/members")
    assert status == 200 and "dan@example.com" in page
    invite_id = page.split(f"{settings}/members/invites/", 1)[1].split("/revoke", 1)[0]

    other = await sign_in(manager)
    assert (await console_post(other, f"{settings}/members/invites/{invite_id}/revoke", token_from=f"{settings}/approvals"))[0] == 403
    assert (await console_get(http, f"{settings}/members"))[1].count('aria-label="Withdraw the invite of dan@example.com"') == 1

    assert (await console_post(http, f"{settings}/members/invites/{invite_id}/revoke", token_from=f"{settings}/members"))[0] == 303
    status, page = await console_get(http, f"{settings}/members")
    assert status == 200 and "dan@example.com" not in page and "No open invites." in page
    assert (await console_post(http, f"{settings}/members/invites/{invite_id}/revoke", token_from=f"{settings}/members"))[0] == 404
    headers = await api_key_headers(console_server, admin.workspace_id)
    url = f"{console_server.base}/connect/v1/workspaces/{admin.workspace_id}/audit-events?action=invite.revoked"
    async with ClientSession() as api, api.get(url, headers=headers) as response:
        events = (await response.json())["data"]
    assert [(e["actorId"], e["targetId"], e["details"]["email"]) for e in events] == [(admin.user_id, invite_id, "dan@example.com")]
