"""Platform REST for app clients (5B point 4): organizations and users, with client_credentials
tokens or x-client-id / x-client-secret; user tokens get 401."""

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata


async def service_client(idp, workspace_id=None):
    metadata = validate_metadata(
        {"client_name": "Backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    )
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, metadata, workspace_id=workspace_id, trust="platform")
    client = {"client_id": issued.row.client_id, "client_secret": issued.client_secret}
    token = (await (await idp.token(client, grant_type="client_credentials")).json())["access_token"]
    return client, {"Authorization": f"Bearer {token}"}


async def test_platform_client_manages_organizations_users_and_memberships(idp):
    client, headers = await service_client(idp)
    created = await idp.http.post("/api/v1/organizations", json={"name": "Globex", "plan": "starter"}, headers=headers)
    assert created.status == 201
    org = await created.json()
    assert org["name"] == "Globex" and org["plan"] == "starter" and org["createdAt"].endswith("Z")
    listing = await (await idp.http.get("/api/v1/organizations", headers=headers)).json()
    assert listing["total"] == 2 and listing["page"] == 1 and listing["limit"] == 20
    patched = await idp.http.patch(f"/api/v1/organizations/{org['id']}", json={"name": "Globex Corp"}, headers=headers)
    assert (await patched.json())["name"] == "Globex Corp"
    user = await (
        await idp.http.post(
            "/api/v1/users", json={"email": "grace@example.com", "password": "long enough pw", "name": "Grace Hopper", "userType": "student"}, headers=headers
        )
    ).json()
    assert user["email"] == "grace@example.com" and user["userType"] == "student" and user["givenName"] == "Grace"
    duplicate = await idp.http.post("/api/v1/users", json={"email": "grace@example.com"}, headers=headers)
    assert duplicate.status == 409
    member = await idp.http.post(f"/api/v1/organizations/{org['id']}/memberships", json={"userId": user["id"], "role": "admin"}, headers=headers)
    assert member.status == 201
    members = await (await idp.http.get(f"/api/v1/organizations/{org['id']}/memberships", headers=headers)).json()
    assert members["data"] == [{**(await member.json())}]
    memberships = await (await idp.http.get(f"/api/v1/users/{user['id']}/memberships", headers=headers)).json()
    assert [m["organizationId"] for m in memberships["data"]] == [org["id"]]
    updated = await idp.http.patch(f"/api/v1/users/{user['id']}", json={"phoneNumber": "+1 555 0100"}, headers=headers)
    assert (await updated.json())["phoneNumber"] == "+1 555 0100"
    found = await (await idp.http.get("/api/v1/users", params={"email": "GRACE@example.com"}, headers=headers)).json()
    assert [u["id"] for u in found["data"]] == [user["id"]]
    assert (await idp.http.get("/api/v1/users/nope", headers=headers)).status == 404
    bad = await idp.http.post("/api/v1/organizations", json={"plan": "starter"}, headers=headers)
    assert bad.status == 400 and "name" in (await bad.json())["message"]


async def test_client_headers_work_and_bad_credentials_or_user_tokens_get_401(idp):
    client, _ = await service_client(idp)
    response = await idp.http.get("/api/v1/users", headers={"x-client-id": client["client_id"], "x-client-secret": client["client_secret"]})
    assert response.status == 200
    assert (await response.json())["total"] == 1
    wrong = await idp.http.get("/api/v1/users", headers={"x-client-id": client["client_id"], "x-client-secret": "nope"})
    assert wrong.status == 401 and (await wrong.json()) == {
        "statusCode": 401,
        "message": "Unauthorized: `x-client-id` and `x-client-secret` do not match a confidential client of this deployment; send a platform client's "
        "`x-client-id` and `x-client-secret` headers, or its client_credentials access token as `Authorization: Bearer <token>`",
    }
    assert (await idp.http.get("/api/v1/organizations")).status == 401
    app_client = await idp.register()
    user_tokens = await idp.tokens(app_client, scope="openid organization permissions")
    response = await idp.http.get("/api/v1/organizations", headers={"Authorization": f"Bearer {user_tokens['access_token']}"})
    assert response.status == 401


async def test_workspace_bound_client_sees_only_its_organization(idp):
    _, platform = await service_client(idp)
    other = await (await idp.http.post("/api/v1/organizations", json={"name": "Elsewhere"}, headers=platform)).json()
    _, headers = await service_client(idp, workspace_id=idp.workspace["workspace_id"])
    listing = await (await idp.http.get("/api/v1/organizations", headers=headers)).json()
    assert [o["id"] for o in listing["data"]] == [idp.workspace["workspace_id"]]
    assert (await idp.http.get(f"/api/v1/organizations/{other['id']}", headers=headers)).status == 404
    assert (await idp.http.post("/api/v1/organizations", json={"name": "x"}, headers=headers)).status == 403
    users = await (await idp.http.get("/api/v1/users", headers=headers)).json()
    assert [u["id"] for u in users["data"]] == [idp.user["id"]]
    created = await (await idp.http.post("/api/v1/users", json={"email": "new@example.com", "role": "viewer"}, headers=headers)).json()
    members = await (await idp.http.get(f"/api/v1/organizations/{idp.workspace['workspace_id']}/memberships", headers=headers)).json()
    assert {m["userId"]: m["role"] for m in members["data"]}[created["id"]] == "viewer"


@pytest.mark.both_databases
async def test_code_flow_on_both_databases(make_idp, database_url):
    idp = await make_idp(database_url=database_url)
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid offline_access")
    refreshed = await idp.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status == 200


async def test_session_cookie_reads_only_the_signed_in_users_own_records(idp):
    client = await idp.register()
    await idp.code_for(client)  # signs the browser in: the test client now holds the session cookie
    me = await idp.http.get("/api/v1/users/me")
    assert me.status == 200 and (await me.json())["id"] == idp.user["id"]
    memberships = await (await idp.http.get(f"/api/v1/users/{idp.user['id']}/memberships")).json()
    assert [m["organizationId"] for m in memberships["data"]] == [idp.workspace["workspace_id"]]
    _, platform = await service_client(idp)
    other = await (await idp.http.post("/api/v1/users", json={"email": "other@example.com"}, headers=platform)).json()
    assert (await idp.http.get(f"/api/v1/users/{other['id']}")).status == 404
    assert (await idp.http.get("/api/v1/users")).status == 401  # listing is for app clients
    assert (await idp.http.get("/api/v1/organizations")).status == 401


async def test_an_organization_without_a_plan_gets_the_deployment_default(make_idp):
    from patchbay.core.settings import WorkspacesSettings

    idp = await make_idp(workspaces=WorkspacesSettings(default_plan="starter"))
    _, headers = await service_client(idp)
    created = await idp.http.post("/api/v1/organizations", json={"name": "Initech"}, headers=headers)
    assert created.status == 201 and (await created.json())["plan"] == "starter"


async def test_platform_bodies_of_the_wrong_type_are_400_naming_the_field(idp):
    _, headers = await service_client(idp)
    user = await (await idp.http.post("/api/v1/users", json={"email": "lin@example.com"}, headers=headers)).json()
    for method, path, body, field in (
        ("post", "/api/v1/organizations", {"name": 5}, "name must be a string"),
        ("post", "/api/v1/users", {"name": "No Email"}, "email is required"),
        ("patch", f"/api/v1/users/{user['id']}", {"emailVerified": "yes"}, "emailVerified must be true or false"),
        ("patch", f"/api/v1/users/{user['id']}", {"phoneNumber": 5}, "phoneNumber must be a string"),
    ):
        response = await getattr(idp.http, method)(path, json=body, headers=headers)
        assert response.status == 400 and field in (await response.json())["message"], (path, body)
