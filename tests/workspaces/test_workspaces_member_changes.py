"""A member's role changed and a member removed, by an admin over the workspaces API: the workspace
always keeps an admin (also when two admins demote each other at once), other roles and other
workspaces are refused, and nothing changes on a refusal."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.users.service import create_user
from patchbay.core.workspaces import service
from patchbay.core.workspaces.audit import Actor
from patchbay.core.workspaces.models import Membership

SYSTEM = Actor("system")

BASE = "/connect/v1/workspaces"


async def _member(app, workspace_id: str, address: str, role: str, make_user, *, token: bool = False):
    """A user who is ``role`` in the workspace: ``(user_id, headers)`` (headers of an access token
    with the role's permissions there when ``token``)."""
    permissions = sorted(ROLE_PERMISSIONS[role]) if token else ()
    user_id, headers = await make_user(app, address, organization_id=workspace_id, permissions=permissions)
    async with app[SERVICES].db.transaction() as session:
        await service.add_member(session, workspace_id=workspace_id, user_id=user_id, role=role)
    return user_id, headers


async def _roles(app, workspace_id: str) -> dict[str, str]:
    async with app[SERVICES].db.session() as session:
        rows = await session.execute(select(Membership.user_id, Membership.role).where(Membership.workspace_id == workspace_id))
        return dict(rows.all())


@pytest.mark.both_databases
async def test_an_admin_lists_changes_and_removes_members(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, admin = await _member(app, ws, "ada@example.test", "admin", make_user, token=True)
    bob_id, _ = await _member(app, ws, "bob@example.test", "viewer", make_user)
    carol_id, _ = await _member(app, ws, "carol@example.test", "manager", make_user)

    listed = await client.get(f"{BASE}/{ws}/members", headers=admin)
    assert listed.status == 200, await listed.text()
    body = await listed.json()
    assert body["total"] == 3 and [(m["email"], m["role"]) for m in body["data"]] == [
        ("ada@example.test", "admin"),
        ("bob@example.test", "viewer"),
        ("carol@example.test", "manager"),
    ]

    changed = await client.patch(f"{BASE}/{ws}/members/{bob_id}", json={"role": "admin"}, headers=admin)
    assert changed.status == 200, await changed.text()
    assert await changed.json() == {"userId": bob_id, "email": "bob@example.test", "name": "Test User", "role": "admin"}

    removed = await client.delete(f"{BASE}/{ws}/members/{carol_id}", headers=admin)
    assert (removed.status, await removed.json()) == (200, {"removed": True, "userId": carol_id})
    assert await _roles(app, ws) == {admin_id: "admin", bob_id: "admin"}

    # with another admin there, an admin may step down and then leave
    demoted = await client.patch(f"{BASE}/{ws}/members/{admin_id}", json={"role": "viewer"}, headers=admin)
    assert (demoted.status, (await demoted.json())["role"]) == (200, "viewer")
    left = await client.delete(f"{BASE}/{ws}/members/{admin_id}", headers=admin)
    assert left.status == 200
    assert await _roles(app, ws) == {bob_id: "admin"}


@pytest.mark.both_databases
async def test_the_last_admin_is_neither_demoted_nor_removed(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, admin = await _member(app, ws, "ada@example.test", "admin", make_user, token=True)
    bob_id, _ = await _member(app, ws, "bob@example.test", "manager", make_user)
    before = await _roles(app, ws)

    for role in ("manager", "viewer"):
        response = await client.patch(f"{BASE}/{ws}/members/{admin_id}", json={"role": role}, headers=admin)
        assert response.status == 409
        assert await response.json() == {
            "statusCode": 409,
            "message": "The workspace's last admin cannot be given another role: make another member admin first",
        }
    response = await client.delete(f"{BASE}/{ws}/members/{admin_id}", headers=admin)
    assert (response.status, (await response.json())["message"]) == (409, "The workspace's last admin cannot be removed: make another member admin first")
    assert await _roles(app, ws) == before

    # a non-admin member is removed whatever the number of admins
    assert (await client.delete(f"{BASE}/{ws}/members/{bob_id}", headers=admin)).status == 200
    assert await _roles(app, ws) == {admin_id: "admin"}


@pytest.mark.both_databases
async def test_two_admins_demoting_each_other_at_once_leave_one_admin(aiohttp_client, make_app, database_url):
    """Each round, two admins demote (or remove) each other concurrently: one change is made, the
    other refused with Conflict, and the workspace always has exactly one admin left."""
    app = make_app(database_url=database_url)
    await aiohttp_client(app)
    services = app[SERVICES]
    for round_ in range(8):
        async with services.db.transaction() as session:
            workspace, _ = await service.create_workspace(session, name=f"Race {round_}")
            users = [await create_user(session, email=f"admin{i}-{round_}@example.test", password=None) for i in (1, 2)]
            for user in users:
                await service.add_member(session, workspace_id=workspace.id, user_id=user.id, role="admin")
        first, second = (user.id for user in users)
        if round_ % 2:
            changes = [service.remove_member(services, workspace_id=workspace.id, user_id=uid, actor=SYSTEM) for uid in (first, second)]
        else:
            changes = [service.change_member_role(services, workspace_id=workspace.id, user_id=uid, role="viewer", actor=SYSTEM) for uid in (first, second)]
        results = await asyncio.gather(*changes, return_exceptions=True)
        assert sorted(type(result).__name__ for result in results) == sorted(["Conflict", "NoneType" if round_ % 2 else "tuple"]), results
        async with services.db.session() as session:
            admins = await session.scalars(select(Membership.user_id).where(Membership.workspace_id == workspace.id, Membership.role == "admin"))
            assert len(list(admins)) == 1


@pytest.mark.parametrize("role", ["manager", "viewer"])
async def test_a_manager_or_viewer_cannot_change_or_remove_members(aiohttp_client, make_app, make_user, role):
    app = make_app()
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, _ = await _member(app, ws, "ada@example.test", "admin", make_user)
    me_id, me = await _member(app, ws, "mallory@example.test", role, make_user, token=True)
    before = await _roles(app, ws)

    for response in (
        await client.patch(f"{BASE}/{ws}/members/{admin_id}", json={"role": "viewer"}, headers=me),
        await client.patch(f"{BASE}/{ws}/members/{me_id}", json={"role": "admin"}, headers=me),
        await client.delete(f"{BASE}/{ws}/members/{admin_id}", headers=me),
        await client.get(f"{BASE}/{ws}/members", headers=me),
    ):
        assert response.status == 403
        assert (await response.json())["message"] == "Missing permission: workspace.admin"
    assert await _roles(app, ws) == before


async def test_another_workspaces_member_is_not_found(aiohttp_client, make_app, make_user):
    app = make_app()
    client = await aiohttp_client(app)
    mine = (await create_workspace_with_key(app, name="Mine"))["workspace_id"]
    theirs = (await create_workspace_with_key(app, name="Theirs"))["workspace_id"]
    _, admin = await _member(app, mine, "ada@example.test", "admin", make_user, token=True)
    their_id, _ = await _member(app, theirs, "eve@example.test", "admin", make_user)
    their_viewer, _ = await _member(app, theirs, "vic@example.test", "viewer", make_user)
    before = await _roles(app, theirs)

    for response in (
        await client.patch(f"{BASE}/{mine}/members/{their_id}", json={"role": "viewer"}, headers=admin),
        await client.delete(f"{BASE}/{mine}/members/{their_viewer}", headers=admin),
        await client.delete(f"{BASE}/{mine}/members/no-such-user", headers=admin),
    ):
        assert (response.status, (await response.json())["message"]) == (404, "Member not found")
    for response in (  # their workspace in the path: not the caller's
        await client.patch(f"{BASE}/{theirs}/members/{their_viewer}", json={"role": "admin"}, headers=admin),
        await client.delete(f"{BASE}/{theirs}/members/{their_viewer}", headers=admin),
    ):
        assert (response.status, (await response.json())["message"]) == (404, "Workspace not found")
    assert await _roles(app, theirs) == before


async def test_an_unknown_role_is_refused(aiohttp_client, make_app, make_user):
    app = make_app()
    client = await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    _, admin = await _member(app, ws, "ada@example.test", "admin", make_user, token=True)
    bob_id, _ = await _member(app, ws, "bob@example.test", "viewer", make_user)

    for body in ({"role": "owner"}, {}, {"role": 1}):
        response = await client.patch(f"{BASE}/{ws}/members/{bob_id}", json=body, headers=admin)
        assert response.status == 400, body
        error = await response.json()
        assert error["statusCode"] == 400 and "role" in error["message"], error
    with pytest.raises(Invalid, match="role must be one of admin, manager, viewer"):
        await service.change_member_role(app[SERVICES], workspace_id=ws, user_id=bob_id, role="owner", actor=SYSTEM)
    assert (await _roles(app, ws))[bob_id] == "viewer"


async def test_adding_a_member_again_keeps_the_last_admin(aiohttp_client, make_app, make_user):
    """``add_member`` on a member (the platform API's role change) keeps the rule too."""
    app = make_app()
    await aiohttp_client(app)
    services = app[SERVICES]
    ws = (await create_workspace_with_key(app))["workspace_id"]
    admin_id, _ = await _member(app, ws, "ada@example.test", "admin", make_user)
    with pytest.raises(Conflict):
        async with services.db.transaction() as session:
            await service.add_member(session, workspace_id=ws, user_id=admin_id, role="viewer")
    with pytest.raises(NotFound):
        async with services.db.transaction() as session:
            await service.delete_member(session, workspace_id=ws, user_id="no-such-user")
    assert await _roles(app, ws) == {admin_id: "admin"}
