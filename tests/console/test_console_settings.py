"""The settings pages over HTTP: API keys (made, shown once, revoked; admin only), members and
invites, the approvals queue, alert subscriptions, plan and usage."""

from __future__ import annotations

import pytest
from aiohttp import ClientSession
from sqlalchemy import select

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.models import ApprovalRequest
from patchbay.core.approvals.service import gate_connect
from patchbay.core.connections.models import Connection
from patchbay.core.security.models import ApiKey
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.security.service import Principal
from tests.console.conftest import csrf_of


class GatedPack:
    @hookimpl
    def register_providers(self):
        return [Provider(name="gatedcrm", display_name="Gated CRM", category="crm", auth_mode="api_key", api_base_url="http://127.0.0.1:9/api")]


@pytest.fixture
def console_plugins():
    return [GatedPack()]


async def _page(http, path: str) -> tuple[int, str]:
    async with http.get(http.base + path) as response:
        return response.status, await response.text()


async def _post(http, path: str, form: dict, *, token_from: str | None = None):
    if "csrf" not in form:
        form = {**form, "csrf": csrf_of((await _page(http, token_from or path))[1])}
    async with http.post(http.base + path, data=form, allow_redirects=False) as response:
        return response.status, await response.text(), response.headers.get("Location")


async def test_an_admin_makes_an_api_key_shown_once_and_revokes_it(make_person, sign_in, console_server):
    admin = await make_person("admin")
    http = await sign_in(admin)
    keys = f"/console/w/{admin.workspace_id}/settings/keys"
    status, page, _ = await _post(http, keys, {"name": "ci deploys", "access": "read", "expiresInDays": "30"})
    assert status == 200 and "not shown again" in page
    key = page.split('id="new-key">', 1)[1].split("<", 1)[0]
    assert key.startswith("pb_")
    async with ClientSession() as api, api.get(f"{console_server.base}/connect/v1/connections", headers={"x-api-key": key}) as response:
        assert response.status == 200, "the key opens the API"
    async with ClientSession() as api, api.get(f"{console_server.base}/connect/v1/api-keys", headers={"x-api-key": key}) as response:
        assert response.status == 403, "read access: the viewer's permissions"
    status, page = await _page(http, keys)
    assert key not in page and "ci deploys" in page and key[:10] in page
    async with console_server.app[SERVICES].db.session() as db:
        row = await db.scalar(select(ApiKey).where(ApiKey.name == "ci deploys"))
    assert row.workspace_id == admin.workspace_id and row.expires_at is not None and set(row.permissions) == ROLE_PERMISSIONS["viewer"]
    status, _, location = await _post(http, f"{keys}/{row.id}/revoke", {}, token_from=keys)
    assert status == 303 and location == keys
    async with ClientSession() as api, api.get(f"{console_server.base}/connect/v1/connections", headers={"x-api-key": key}) as response:
        assert response.status == 401, "the revoked key stops working"
    status, page = await _page(http, keys)
    assert "revoked" in page


async def test_a_bad_key_form_says_why(make_person, sign_in):
    admin = await make_person("admin")
    http = await sign_in(admin)
    keys = f"/console/w/{admin.workspace_id}/settings/keys"
    status, page, _ = await _post(http, keys, {"name": "x", "expiresInDays": "-3"})
    assert status == 400 and "whole number" in page
    status, page, _ = await _post(http, keys, {"name": "   "})
    assert status == 400 and "name must have" in page


@pytest.mark.parametrize("role", ["viewer", "manager"])
async def test_only_an_admin_sees_and_makes_keys(make_person, sign_in, console_server, role):
    person = await make_person(role)
    http = await sign_in(person)
    keys = f"/console/w/{person.workspace_id}/settings/keys"
    assert (await _page(http, keys))[0] == 403
    status, _, _ = await _post(http, keys, {"name": "sneaky"}, token_from=f"/console/w/{person.workspace_id}/")
    assert status == 403
    async with console_server.app[SERVICES].db.session() as db:
        assert await db.scalar(select(ApiKey.id).where(ApiKey.name == "sneaky")) is None
    status, page = await _page(http, f"/console/w/{person.workspace_id}/settings")
    assert status == 200 and "Approvals" in page and "API keys" not in page, "the settings open on a tab the role sees"


async def test_another_workspaces_key_answers_404(make_person, sign_in, console_server):
    mine = await make_person("admin")
    theirs = await make_person("admin")
    async with console_server.app[SERVICES].db.transaction() as db:
        from patchbay.core.security.api_keys import create_api_key

        issued = await create_api_key(db, console_server.app[SERVICES].secrets, workspace_id=theirs.workspace_id, name="theirs")
    http = await sign_in(mine)
    keys = f"/console/w/{mine.workspace_id}/settings/keys"
    status, page, _ = await _post(http, f"{keys}/{issued.record.id}/revoke", {}, token_from=keys)
    assert status == 404 and "Not found" in page
    status, _, _ = await _post(http, f"/console/w/{theirs.workspace_id}/settings/keys/{issued.record.id}/revoke", {}, token_from=keys)
    assert status == 404
    async with console_server.app[SERVICES].db.session() as db:
        assert (await db.get(ApiKey, issued.record.id)).revoked_at is None


async def test_a_viewers_post_is_refused(make_person, sign_in, console_server):
    viewer = await make_person("viewer")
    http = await sign_in(viewer)
    base = f"/console/w/{viewer.workspace_id}/settings"
    status, _, _ = await _post(http, f"{base}/alerts", {"channel": "webhook", "target": "https://example.com/hook"}, token_from=f"{base}/alerts")
    assert status == 403
    async with console_server.app[SERVICES].db.session() as db:
        from patchbay.core.alerts.models import AlertSubscription

        assert list(await db.scalars(select(AlertSubscription))) == []


async def _pending(app, workspace_id: str, requester_id: str) -> str:
    principal = Principal("access_token", workspace_id, ROLE_PERMISSIONS["manager"], subject=requester_id, client_id="x")
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        return await gate_connect(
            app[SERVICES], session, workspace_id=workspace_id, provider="gatedcrm", principal=principal, payload={"credentials": {"apiKey": "k-123"}}
        )


async def _gate_crm(app, workspace_id: str) -> None:
    from patchbay.core.approvals.service import change_policy

    admin = Principal("api_key", workspace_id, ROLE_PERMISSIONS["admin"])
    await change_policy(app[SERVICES], workspace_id, {"enabled": True, "categories": ["crm"]}, principal=admin)


async def test_an_admin_approves_and_denies_pending_connections(make_person, sign_in, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    await _gate_crm(console_server.app, admin.workspace_id)
    first = await _pending(console_server.app, admin.workspace_id, manager.user_id)
    second = await _pending(console_server.app, admin.workspace_id, manager.user_id)
    http = await sign_in(admin)
    approvals = f"/console/w/{admin.workspace_id}/settings/approvals"
    status, page = await _page(http, approvals)
    assert status == 200 and page.count("Gated CRM") + page.count("gatedcrm") >= 2
    status, _, location = await _post(http, f"{approvals}/{first}/approve", {"note": "fine"}, token_from=approvals)
    assert status == 303 and location == approvals
    status, _, _ = await _post(http, f"{approvals}/{second}/deny", {}, token_from=approvals)
    assert status == 303
    async with console_server.app[SERVICES].db.session(tenant=admin.workspace_id) as db:
        decided = {row.id: row for row in await db.scalars(select(ApprovalRequest))}
        connection = await db.get(Connection, decided[first].connection_id)
    assert decided[first].status == "approved" and decided[first].decided_by == admin.user_id and decided[first].decision_note == "fine"
    assert decided[second].status == "denied"
    assert connection.provider == "gatedcrm" and connection.status == "connected"
    status, page = await _page(http, approvals)
    assert "Nothing is waiting for approval" in page and "approved" in page


async def test_a_manager_who_is_not_an_approver_is_refused_by_the_policy(make_person, sign_in, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    await _gate_crm(console_server.app, admin.workspace_id)
    request_id = await _pending(console_server.app, admin.workspace_id, manager.user_id)
    http = await sign_in(manager)
    approvals = f"/console/w/{admin.workspace_id}/settings/approvals"
    status, page, _ = await _post(http, f"{approvals}/{request_id}/approve", {}, token_from=approvals)
    assert status == 403 and "approver" in page


async def test_alert_subscriptions_are_made_and_deleted(make_person, sign_in, console_server):
    manager = await make_person("manager")
    http = await sign_in(manager)
    alerts = f"/console/w/{manager.workspace_id}/settings/alerts"
    status, page, _ = await _post(http, alerts, {"channel": "webhook", "target": "not a url", "event": "flow.failed"})
    assert status == 400 and 'role="alert"' in page
    status, _, location = await _post(http, alerts, {"channel": "webhook", "target": "https://hooks.example.com/a", "event": "jobs.failing"})
    assert status == 303 and location == alerts
    status, page = await _page(http, alerts)
    assert "https://hooks.example.com/a" in page and "jobs.failing" in page
    from patchbay.core.alerts.models import AlertSubscription

    async with console_server.app[SERVICES].db.session() as db:
        row = await db.scalar(select(AlertSubscription))
    status, _, _ = await _post(http, f"{alerts}/{row.id}/delete", {}, token_from=alerts)
    assert status == 303
    assert "No alert subscriptions" in (await _page(http, alerts))[1]


async def test_members_invites_and_the_plan(make_person, sign_in):
    admin = await make_person("admin")
    await make_person("viewer", admin.workspace_id, email="vera@example.com")
    http = await sign_in(admin)
    members = f"/console/w/{admin.workspace_id}/settings/members"
    status, page = await _page(http, members)
    assert status == 200 and "vera@example.com" in page and "No open invites" in page
    status, page, _ = await _post(http, f"{members}/invite", {"email": "new@example.com", "role": "manager"}, token_from=members)
    assert status == 200 and "/invite" in page.split('id="invite-link">', 1)[1].split("<", 1)[0]
    status, page = await _page(http, members)
    assert "new@example.com" in page
    status, page, _ = await _post(http, f"{members}/invite", {"email": "vera@example.com", "role": "viewer"}, token_from=members)
    assert status in (400, 409) and "already a member" in page
    status, page = await _page(http, f"/console/w/{admin.workspace_id}/settings/plan")
    assert status == 200 and "enterprise" in page
