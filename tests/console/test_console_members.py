"""The Members tab over HTTP: an admin changes a member's role and removes a member; a removed or
demoted person's next page is refused at once; other roles, forms without the CSRF token, other
workspaces' members and the last admin are refused, and nothing changes."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.workspaces.models import Membership
from tests.console.conftest import console_get, console_post


@pytest.fixture
def console_settings(database_url):
    return {"database_url": database_url}


def _members(workspace_id: str) -> str:
    return f"/console/w/{workspace_id}/settings/members"


async def _roles(server, workspace_id: str) -> dict[str, str]:
    async with server.app[SERVICES].db.session() as session:
        rows = await session.execute(select(Membership.user_id, Membership.role).where(Membership.workspace_id == workspace_id))
        return dict(rows.all())


@pytest.mark.both_databases
async def test_an_admin_changes_a_role_and_removes_a_member(make_person, sign_in, console_server):
    admin = await make_person("admin")
    bob = await make_person("viewer", admin.workspace_id)
    carol = await make_person("manager", admin.workspace_id)
    http = await sign_in(admin)
    members = _members(admin.workspace_id)
    status, page = await console_get(http, members)
    assert status == 200 and f'action="{members}/{bob.user_id}/role"' in page and f'action="{members}/{carol.user_id}/remove"' in page

    status, _, location = await console_post(http, f"{members}/{bob.user_id}/role", {"role": "manager"}, token_from=members)
    assert (status, location) == (303, members)
    status, _, location = await console_post(http, f"{members}/{carol.user_id}/remove", {}, token_from=members)
    assert (status, location) == (303, members)
    assert await _roles(console_server, admin.workspace_id) == {admin.user_id: "admin", bob.user_id: "manager"}

    status, page = await console_get(http, members)
    assert status == 200 and carol.email not in page
    bobs_select = page.split(f'id="role-{bob.user_id}"', 1)[1].split("</select>", 1)[0]
    assert '<option value="manager" selected>' in bobs_select


async def test_a_removed_or_demoted_persons_next_page_is_refused(make_person, sign_in, console_server):
    admin = await make_person("admin")
    carol = await make_person("manager", admin.workspace_id)
    eve = await make_person("admin", admin.workspace_id)
    carols, eves = await sign_in(carol), await sign_in(eve)
    home, members = f"/console/w/{admin.workspace_id}/", _members(admin.workspace_id)
    assert (await console_get(carols, home))[0] == 200
    assert (await console_get(eves, members))[0] == 200
    alerts = f"/console/w/{admin.workspace_id}/settings/alerts"
    carols_token_page = (await console_get(carols, alerts))[1]

    http = await sign_in(admin)
    assert (await console_post(http, f"{members}/{carol.user_id}/remove", {}, token_from=members))[0] == 303
    assert (await console_post(http, f"{members}/{eve.user_id}/role", {"role": "viewer"}, token_from=members))[0] == 303

    assert (await console_get(carols, home))[0] == 404, "the removed member's session no longer opens the workspace"
    form = {"channel": "webhook", "target": "https://example.com/hook", "csrf": carols_token_page.split('name="csrf" value="', 1)[1].split('"', 1)[0]}
    assert (await console_post(carols, alerts, form))[0] == 404
    assert (await console_get(eves, members))[0] == 403, "the demoted admin no longer sees the members"
    status, _, _ = await console_post(eves, f"{members}/{admin.user_id}/remove", {}, token_from=home)
    assert status == 403
    assert await _roles(console_server, admin.workspace_id) == {admin.user_id: "admin", eve.user_id: "viewer"}


@pytest.mark.parametrize("role", ["manager", "viewer"])
async def test_a_manager_or_viewer_cannot_change_or_remove_members(make_person, sign_in, console_server, role):
    admin = await make_person("admin")
    me = await make_person(role, admin.workspace_id)
    http = await sign_in(me)
    home, members = f"/console/w/{admin.workspace_id}/", _members(admin.workspace_id)
    before = await _roles(console_server, admin.workspace_id)
    assert (await console_get(http, members))[0] == 403
    for path, form in (
        (f"{members}/{admin.user_id}/role", {"role": "viewer"}),
        (f"{members}/{me.user_id}/role", {"role": "admin"}),
        (f"{members}/{admin.user_id}/remove", {}),
    ):
        status, page, _ = await console_post(http, path, form, token_from=home)
        assert status == 403 and "This needs the admin role" in page
    assert await _roles(console_server, admin.workspace_id) == before


async def test_a_form_without_the_csrf_token_is_refused(make_person, sign_in, console_server):
    admin = await make_person("admin")
    bob = await make_person("viewer", admin.workspace_id)
    http = await sign_in(admin)
    members = _members(admin.workspace_id)
    before = await _roles(console_server, admin.workspace_id)
    for form in ({}, {"csrf": "forged"}):
        assert (await console_post(http, f"{members}/{bob.user_id}/role", {"role": "admin", **form}))[0] == 403
        assert (await console_post(http, f"{members}/{bob.user_id}/remove", form))[0] == 403
    assert await _roles(console_server, admin.workspace_id) == before


async def test_another_workspaces_member_is_not_found(make_person, sign_in, console_server):
    admin = await make_person("admin")
    eve = await make_person("admin")
    vic = await make_person("viewer", eve.workspace_id)
    http = await sign_in(admin)
    mine, theirs = _members(admin.workspace_id), _members(eve.workspace_id)
    before = await _roles(console_server, eve.workspace_id)
    for path, form in (
        (f"{mine}/{vic.user_id}/role", {"role": "admin"}),
        (f"{mine}/{eve.user_id}/remove", {}),
        (f"{theirs}/{vic.user_id}/role", {"role": "admin"}),
        (f"{theirs}/{vic.user_id}/remove", {}),
    ):
        status, page, _ = await console_post(http, path, form, token_from=mine)
        assert status == 404 and "Not found" in page, path
    assert await _roles(console_server, eve.workspace_id) == before


async def test_the_last_admin_stays_and_the_page_says_why(make_person, sign_in, console_server):
    admin = await make_person("admin")
    await make_person("manager", admin.workspace_id)
    http = await sign_in(admin)
    members = _members(admin.workspace_id)
    before = await _roles(console_server, admin.workspace_id)
    status, page, _ = await console_post(http, f"{members}/{admin.user_id}/role", {"role": "manager"}, token_from=members)
    assert status == 409 and "last admin cannot be given another role" in page and 'role="alert"' in page
    status, page, _ = await console_post(http, f"{members}/{admin.user_id}/remove", {}, token_from=members)
    assert status == 409 and "last admin cannot be removed" in page
    status, page, _ = await console_post(http, f"{members}/{admin.user_id}/role", {"role": "owner"}, token_from=members)
    assert status == 400
    assert await _roles(console_server, admin.workspace_id) == before


async def test_an_admin_steps_down_and_leaves_while_another_admin_remains(make_person, sign_in, console_server):
    admin = await make_person("admin")
    eve = await make_person("admin", admin.workspace_id)
    http = await sign_in(admin)
    home, members = f"/console/w/{admin.workspace_id}/", _members(admin.workspace_id)
    status, _, location = await console_post(http, f"{members}/{admin.user_id}/role", {"role": "manager"}, token_from=members)
    assert (status, location) == (303, home)
    assert (await console_get(http, members))[0] == 403
    assert (await console_get(http, home))[0] == 200

    admins = await sign_in(eve)
    await console_post(admins, f"{members}/{admin.user_id}/role", {"role": "admin"}, token_from=members)
    status, _, location = await console_post(http, f"{members}/{admin.user_id}/remove", {}, token_from=members)
    assert (status, location) == (303, "/console/")
    assert (await console_get(http, home))[0] == 404
    assert await _roles(console_server, admin.workspace_id) == {eve.user_id: "admin"}
