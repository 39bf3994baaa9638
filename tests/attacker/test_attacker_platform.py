"""Attacks on the platform REST API (``/api/v1/organizations``, ``/api/v1/users``) by outsiders:
a client anyone can register must not be trusted with the platform (issue 11, point 1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from aiohttp.test_utils import make_mocked_request
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.identity.models import Grant
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.security.auth import authenticate
from patchbay.core.settings import IdentitySettings
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.users.service import create_user, find_user_by_email, verify_password
from patchbay.core.workspaces.models import Workspace
from patchbay.core.workspaces.service import add_member, create_workspace, delete_member, set_member_role

VICTIM_PASSWORD = "victim's own password"


@pytest.fixture
async def victim(client) -> str:
    async with client.server.app[SERVICES].db.transaction() as session:
        user = await create_user(session, email="victim@example.com", password=VICTIM_PASSWORD, name="Victim")
        return user.id


async def _self_registered(client, **metadata) -> dict:
    body = {"client_name": "Evil", "redirect_uris": ["https://evil.example/cb"], "grant_types": ["client_credentials"], "scope": "openid", **metadata}
    response = await client.post("/api/v1/oidc/register", json=body)
    assert response.status == 201, await response.text()
    return await response.json()


async def test_self_registered_client_cannot_use_the_platform_api_with_its_secret(client, victim):
    evil = await _self_registered(client)
    headers = {"x-client-id": evil["client_id"], "x-client-secret": evil["client_secret"]}
    for method, path, body in [
        ("GET", "/api/v1/users", None),
        ("GET", "/api/v1/organizations", None),
        ("PATCH", f"/api/v1/users/{victim}", {"password": "attacker chosen pw"}),
        ("POST", "/api/v1/organizations", {"name": "Mine", "plan": "enterprise"}),
    ]:
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status == 403, (method, path, response.status)
        assert (await response.json())["statusCode"] == 403
    async with client.server.app[SERVICES].db.session() as session:
        assert verify_password((await session.get(User, victim)).password_hash, VICTIM_PASSWORD)


async def test_self_registered_client_cannot_use_the_platform_api_with_a_client_credentials_token(client, victim):
    evil = await _self_registered(client)
    answer = await client.post(
        "/api/v1/oidc/token",
        data={"grant_type": "client_credentials", "client_id": evil["client_id"], "client_secret": evil["client_secret"], "scope": "openid"},
    )
    if answer.status == 200:  # a third-party client may still get a token; it must not open the platform API
        token = (await answer.json())["access_token"]
        response = await client.get("/api/v1/users", headers={"Authorization": f"Bearer {token}"})
        assert response.status == 403
    else:
        assert answer.status in (400, 401)


async def test_self_registered_client_cannot_ask_for_a_ten_year_token(client):
    response = await client.post(
        "/api/v1/oidc/register", json={"client_name": "Evil", "redirect_uris": ["https://evil.example/cb"], "access_token_ttl": 315360000}
    )
    assert response.status == 400
    body = await response.json()
    assert body["error"] == "invalid_client_metadata" and "3600" in body["error_description"]
    long_refresh = await client.post(
        "/api/v1/oidc/register", json={"client_name": "Evil", "redirect_uris": ["https://evil.example/cb"], "refresh_token_ttl": 315360000}
    )
    assert long_refresh.status == 400


def _identity_driver():
    """The identity tests' driver (an app with a user in a workspace, and the browser flow)."""
    path = Path(__file__).parents[1] / "identity" / "conftest.py"
    spec = importlib.util.spec_from_file_location("identity_driver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_driver = _identity_driver()
make_idp = _driver.make_idp


@pytest.fixture
async def idp(make_idp):
    return await make_idp(identity=IdentitySettings(grant_check_seconds=0))


async def _connect_principal(idp, access_token: str):
    request = make_mocked_request("GET", "/connect/v1/flows", headers={"Authorization": f"Bearer {access_token}"}, app=idp.app)
    return await authenticate(request)


async def test_a_third_party_app_the_user_signed_in_to_gets_no_key_to_the_users_workspaces(idp):
    third_party = await idp.register()
    tokens = await idp.tokens(third_party, scope="openid organization permissions")
    assert await _connect_principal(idp, tokens["access_token"]) is None
    response = await idp.http.get("/connect/v1/flows", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status == 401


async def test_a_revoked_grant_closes_the_connect_api_for_its_access_tokens(idp):
    first_party = await idp.operator_client("first_party")
    tokens = await idp.tokens(first_party, scope="openid organization permissions")
    assert (await _connect_principal(idp, tokens["access_token"])).workspace_id == idp.workspace["workspace_id"]
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(update(Grant).values(revoked_at=utcnow()))
    assert await _connect_principal(idp, tokens["access_token"]) is None


async def _bound_platform_client(idp) -> dict[str, str]:
    """A platform client the operator bound to the test workspace (``--platform --workspace``)."""
    body = {"client_name": "Tenant backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, validate_metadata(body), workspace_id=idp.workspace["workspace_id"], trust="platform")
    return {"x-client-id": issued.row.client_id, "x-client-secret": issued.client_secret}


async def test_a_workspace_bound_platform_client_cannot_change_its_own_plan(idp):
    headers = await _bound_platform_client(idp)
    response = await idp.http.patch(f"/api/v1/organizations/{idp.workspace['workspace_id']}", json={"plan": "enterprise"}, headers=headers)
    assert response.status == 403
    async with idp.app[SERVICES].db.session() as session:
        assert (await session.get(Workspace, idp.workspace["workspace_id"])).plan == "free"
    renamed = await idp.http.patch(f"/api/v1/organizations/{idp.workspace['workspace_id']}", json={"name": "Acme 2"}, headers=headers)
    assert renamed.status == 200


async def test_a_workspace_bound_platform_client_cannot_reset_the_password_of_a_member_of_other_workspaces(idp):
    headers = await _bound_platform_client(idp)
    async with idp.app[SERVICES].db.transaction() as session:
        other, _ = await create_workspace(session, name="Elsewhere")
        await add_member(session, workspace_id=other.id, user_id=idp.user["id"], role="admin")
    for change in ({"password": "attacker chosen pw"}, {"emailVerified": False}):
        response = await idp.http.patch(f"/api/v1/users/{idp.user['id']}", json=change, headers=headers)
        assert response.status == 403, change
    async with idp.app[SERVICES].db.session() as session:
        user = await session.get(User, idp.user["id"])
        assert verify_password(user.password_hash, idp.password) and user.email_verified
    own = (await (await idp.http.post("/api/v1/users", json={"email": "own@example.com"}, headers=headers)).json())["id"]
    assert (await idp.http.patch(f"/api/v1/users/{own}", json={"password": "a new long pw"}, headers=headers)).status == 200


async def test_a_workspace_bound_platform_client_cannot_vouch_for_an_email_address(idp):
    headers = await _bound_platform_client(idp)
    created = await idp.http.post("/api/v1/users", json={"email": "ceo@bigcorp.example", "emailVerified": True}, headers=headers)
    assert created.status == 403
    async with idp.app[SERVICES].db.session() as session:
        assert await find_user_by_email(session, "ceo@bigcorp.example") is None
    plain = await idp.http.post("/api/v1/users", json={"email": "ceo@bigcorp.example"}, headers=headers)
    assert plain.status == 201 and (await plain.json())["emailVerified"] is False
    vouched = await idp.http.patch(f"/api/v1/users/{(await plain.json())['id']}", json={"emailVerified": True}, headers=headers)
    assert vouched.status == 403


async def test_an_app_the_user_merely_signed_in_to_cannot_delete_the_user(idp):
    third_party = await idp.register()
    tokens = await idp.tokens(third_party, scope="openid")
    response = await idp.http.post("/compliance/data-deletion", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status == 401
    assert (await response.json())["statusCode"] == 401
    async with idp.app[SERVICES].db.session() as session:
        assert await session.get(User, idp.user["id"]) is not None
        assert (await session.execute(select(DeletionRequest))).first() is None


async def test_the_users_first_party_app_can_request_the_users_deletion(idp):
    first_party = await idp.operator_client("first_party")
    tokens = await idp.tokens(first_party, scope="openid")
    response = await idp.http.post("/compliance/data-deletion", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status == 201 and (await response.json())["confirmation_code"]


async def test_a_workspace_api_key_creates_workspaces_server_to_server(idp):
    """Spec 4.21: POST /connect/v1/workspaces is server-to-server; a key may make only its own members owners."""
    headers = idp.workspace["headers"]
    body = {"name": "Sub tenant", "externalId": "sub-1", "ownerUserId": idp.user["id"]}
    created = await idp.http.post("/connect/v1/workspaces", json=body, headers=headers)
    assert created.status == 201, await created.text()
    workspace = await created.json()
    assert workspace["created"] is True and workspace["plan"] == "enterprise"  # [workspaces] default_plan; a caller without the admin key cannot choose
    again = await (await idp.http.post("/connect/v1/workspaces", json=body, headers=headers)).json()
    assert (again["id"], again["created"]) == (workspace["id"], False)
    async with idp.app[SERVICES].db.session() as session:
        outsider = await create_user(session, email="outsider@example.com", password=None)
        await session.commit()
        outsider_id = outsider.id
    hijack = await idp.http.post("/connect/v1/workspaces", json={"name": "Trap", "ownerUserId": outsider_id}, headers=headers)
    assert hijack.status == 400
    by_email = await idp.http.post("/connect/v1/workspaces", json={"name": "Trap", "ownerEmail": "outsider@example.com"}, headers=headers)
    assert by_email.status == 400
    planned = await idp.http.post("/connect/v1/workspaces", json={"name": "Rich", "plan": "enterprise"}, headers=headers)
    assert planned.status == 400
    async with idp.app[SERVICES].db.transaction() as session:
        narrow = await create_api_key(session, idp.app[SERVICES].secrets, workspace_id=idp.workspace["workspace_id"], name="narrow", permissions=["flows.view"])
    refused = await idp.http.post("/connect/v1/workspaces", json={"name": "Nope"}, headers={"x-api-key": narrow.key})
    assert refused.status == 403


async def test_a_removed_or_demoted_members_token_opens_no_more_than_their_role_now(idp):
    first_party = await idp.operator_client("first_party")
    tokens = await idp.tokens(first_party, scope="openid organization permissions")
    workspace_id, user_id = idp.workspace["workspace_id"], idp.user["id"]
    assert "flows.write" in (await _connect_principal(idp, tokens["access_token"])).permissions
    async with idp.app[SERVICES].db.transaction() as session:
        await set_member_role(session, workspace_id=workspace_id, user_id=user_id, role="viewer")
    demoted = await _connect_principal(idp, tokens["access_token"])
    assert demoted.permissions and all(permission.endswith(".view") for permission in demoted.permissions)
    flow = {"name": "after demotion", "steps": [{"id": "t", "type": "transform", "output": 1}]}
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert (await idp.http.post("/connect/v1/flows", json=flow, headers=headers)).status == 403
    async with idp.app[SERVICES].db.transaction() as session:
        await delete_member(session, workspace_id=workspace_id, user_id=user_id)
    assert await _connect_principal(idp, tokens["access_token"]) is None
    assert (await idp.http.get("/connect/v1/flows", headers=headers)).status == 401
