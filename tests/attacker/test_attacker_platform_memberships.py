"""Attacks by a workspace-bound platform client on other tenants' accounts (issue 22, point 5): it
may add to its organization, and change, only the users it created itself; a user id it learned
(the ``sub`` of an ID token: here, a victim who once signed in to the attacker's app) gives it
nothing. Sent over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.users.models import User
from patchbay.core.users.service import create_user, verify_password
from patchbay.core.workspaces.service import add_member, create_workspace

_spec = importlib.util.spec_from_file_location("conftest_sessions", Path(__file__).with_name("conftest_sessions.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)  # tests/ is no package (--import-mode=importlib): load the helper by path
make_idp = helpers.make_idp  # fixture

VICTIM = {"email": "victim@othertenant.example", "password": "the victim's own password"}
NOT_FOUND = {"statusCode": 404, "message": "User not found"}


@pytest.fixture
async def idp(make_idp, database_url):
    return await make_idp(database_url=database_url)


async def bound_platform_client(idp, workspace_id: str) -> dict[str, str]:
    """The x-client-id/x-client-secret of a platform client the operator bound to ``workspace_id``."""
    body = {"client_name": "Tenant backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, validate_metadata(body), workspace_id=workspace_id, trust="platform")
    return {"x-client-id": issued.row.client_id, "x-client-secret": issued.client_secret}


async def victim_sub(idp, *, tenant: bool) -> str:
    """A victim (a member of another tenant's workspace when ``tenant``, else of none) who signs in
    to the attacker's app: the ``sub`` the app learns from the victim's tokens."""
    async with idp.app[SERVICES].db.transaction() as session:
        user = await create_user(session, email=VICTIM["email"], password=VICTIM["password"], name="Victim Person", phone_number="+1 555 0199")
        if tenant:
            other, _ = await create_workspace(session, name="Other tenant")
            await add_member(session, workspace_id=other.id, user_id=user.id, role="admin")
    attackers_app = await idp.register(scope="openid")
    verifier, challenge = idp.pkce_pair()
    login = await idp.authorize(attackers_app, code_challenge=challenge, code_challenge_method="S256")
    consent = await idp.login(login.headers["Location"], email=VICTIM["email"], password=VICTIM["password"])
    code = idp.query_of((await idp.consent(consent.headers["Location"])).headers["Location"])["code"]
    tokens = await (await idp.token(attackers_app, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)).json()
    info = await (await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})).json()
    idp.http.session.cookie_jar.clear()
    return info["sub"]


async def assert_victim_untouched(idp, victim_id: str) -> None:
    async with idp.app[SERVICES].db.session() as session:
        victim = await session.get(User, victim_id)
    assert verify_password(victim.password_hash, VICTIM["password"])
    assert (victim.name, victim.phone_number) == ("Victim Person", "+1 555 0199")


@pytest.mark.parametrize("tenant", [True, False], ids=["member-of-another-tenant", "member-of-no-workspace"])
async def test_a_bound_platform_client_cannot_add_a_user_it_did_not_create_nor_then_change_them(idp, tenant):
    victim_id = await victim_sub(idp, tenant=tenant)
    attacker = await bound_platform_client(idp, idp.workspace["workspace_id"])
    own_org = idp.workspace["workspace_id"]
    added = await idp.http.post(f"/api/v1/organizations/{own_org}/memberships", json={"userId": victim_id, "role": "admin"}, headers=attacker)
    assert (added.status, await added.json()) == (404, NOT_FOUND)
    for change in ({"password": "attacker chosen pw"}, {"name": "Owned"}, {"phoneNumber": "+1 555 0666"}):
        response = await idp.http.patch(f"/api/v1/users/{victim_id}", json=change, headers=attacker)
        assert (response.status, await response.json()) == (404, NOT_FOUND), change
    members = await (await idp.http.get(f"/api/v1/organizations/{own_org}/memberships", headers=attacker)).json()
    assert victim_id not in {member["userId"] for member in members["data"]}
    await assert_victim_untouched(idp, victim_id)


async def test_a_bound_platform_client_cannot_add_a_user_another_platform_client_created(idp):
    async with idp.app[SERVICES].db.transaction() as session:
        other, _ = await create_workspace(session, name="Other tenant")
    others_backend = await bound_platform_client(idp, other.id)
    theirs = await (await idp.http.post("/api/v1/users", json={"email": "theirs@example.com"}, headers=others_backend)).json()
    attacker = await bound_platform_client(idp, idp.workspace["workspace_id"])
    added = await idp.http.post(f"/api/v1/organizations/{idp.workspace['workspace_id']}/memberships", json={"userId": theirs["id"]}, headers=attacker)
    assert (added.status, await added.json()) == (404, NOT_FOUND)


async def test_a_bound_platform_client_cannot_change_a_member_of_its_organization_it_did_not_create(idp):
    """The workspace's own people (here its manager, a member of this organization only) are not
    the backend's to rename or to give a password."""
    attacker = await bound_platform_client(idp, idp.workspace["workspace_id"])
    for change in ({"password": "attacker chosen pw"}, {"name": "Owned"}, {"phoneNumber": "+1 555 0666"}):
        response = await idp.http.patch(f"/api/v1/users/{idp.user['id']}", json=change, headers=attacker)
        assert response.status == 403, change
        assert (await response.json())["statusCode"] == 403
    async with idp.app[SERVICES].db.session() as session:
        user = await session.get(User, idp.user["id"])
    assert verify_password(user.password_hash, idp.password) and user.name == "Ada Lovelace"


async def test_a_bound_platform_client_manages_the_users_it_created_while_they_are_only_its_own(idp):
    own_org = idp.workspace["workspace_id"]
    backend = await bound_platform_client(idp, own_org)
    created = await (await idp.http.post("/api/v1/users", json={"email": "own@example.com", "password": "first long pw"}, headers=backend)).json()
    promoted = await idp.http.post(f"/api/v1/organizations/{own_org}/memberships", json={"userId": created["id"], "role": "admin"}, headers=backend)
    assert promoted.status == 201 and (await promoted.json())["role"] == "admin"
    changed = await idp.http.patch(f"/api/v1/users/{created['id']}", json={"password": "second long pw", "name": "Own User"}, headers=backend)
    assert changed.status == 200 and (await changed.json())["name"] == "Own User"
    async with idp.app[SERVICES].db.transaction() as session:
        elsewhere, _ = await create_workspace(session, name="Joined later")
        await add_member(session, workspace_id=elsewhere.id, user_id=created["id"], role="viewer")
    shared = await idp.http.patch(f"/api/v1/users/{created['id']}", json={"name": "Renamed"}, headers=backend)
    assert shared.status == 403
    async with idp.app[SERVICES].db.session() as session:
        user = await session.get(User, created["id"])
    assert verify_password(user.password_hash, "second long pw") and user.name == "Own User"
