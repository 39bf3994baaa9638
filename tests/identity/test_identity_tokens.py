"""The token endpoint: the three grants, their claims (2.16), code reuse (3.5), refresh (rotation
and reuse detection), client authentication and the error shapes of 7B."""

import base64
import time
from datetime import timedelta

import pytest
from aiohttp.test_utils import make_mocked_request
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.models import AuthorizationCode, RefreshToken
from patchbay.core.security.auth import authenticate
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.timeutil import utcnow

FULL = "openid profile email phone organization permissions offline_access"


async def decode(idp, token):
    keys = KeySet.import_key_set(await (await idp.http.get("/api/v1/oidc/jwks")).json())
    return jwt.decode(token, keys, algorithms=["RS256"])


async def test_code_exchange_answers_every_field_with_no_store(idp):
    client = await idp.register()
    code, verifier = await idp.code_for(client, scope=FULL, nonce="n-0S6")
    response = await idp.token(client, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store" and response.headers["Pragma"] == "no-cache"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    body = await response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["scope"] == FULL
    assert body["refresh_token"] and "." not in body["refresh_token"]  # opaque
    issuer = idp.app[SERVICES].settings.resolved_issuer
    id_token = await decode(idp, body["id_token"])
    claims = id_token.claims
    assert id_token.header["alg"] == "RS256" and id_token.header["kid"]
    assert claims["iss"] == issuer and claims["aud"] == client["client_id"] and claims["sub"] == idp.user["id"]
    assert claims["nonce"] == "n-0S6" and claims["token_type"] == "id_token" and claims["exp"] - claims["iat"] == 3600
    assert claims["email"] == "ada@example.com" and claims["email_verified"] is True
    assert claims["name"] == "Ada Lovelace" and claims["given_name"] == "Ada" and claims["family_name"] == "Lovelace"
    access = (await decode(idp, body["access_token"])).claims
    for name in ("iss", "sub", "aud", "iat", "exp", "scope"):
        assert name in access
    assert access["token_type"] == "access_token" and access["scope"] == FULL
    assert access["organization_id"] == idp.workspace["workspace_id"]
    assert access["organization_memberships"] == [{"organization_id": idp.workspace["workspace_id"], "role": "manager"}]
    assert access["user_type"] == "customer_admin" and access["phone_number"] == "+44 20 7946 0000"
    assert access["roles"] == ["manager"] and set(access["permissions"]) == ROLE_PERMISSIONS["manager"]
    async with idp.app[SERVICES].db.session() as session:  # stored hashed
        row = await session.scalar(select(RefreshToken))
    assert row.token_digest == idp.app[SERVICES].secrets.digest(body["refresh_token"]) and body["refresh_token"] not in row.token_digest


async def test_claims_follow_the_granted_scopes(idp):
    client = await idp.register()
    body = await idp.tokens(client, scope="openid")
    claims = (await decode(idp, body["access_token"])).claims
    for absent in ("email", "name", "organization_id", "permissions", "phone_number"):
        assert absent not in claims
    assert "refresh_token" not in body  # no offline_access
    id_claims = (await decode(idp, body["id_token"])).claims
    assert "email" not in id_claims and id_claims["sub"] == idp.user["id"]


async def test_user_token_opens_the_connect_api_of_its_organization(idp):
    client = await idp.operator_client("first_party")
    body = await idp.tokens(client, scope="openid organization permissions")
    request = make_mocked_request("GET", "/connect/v1/flows", headers={"Authorization": f"Bearer {body['access_token']}"}, app=idp.app)
    principal = await authenticate(request)
    assert principal.workspace_id == idp.workspace["workspace_id"]
    assert principal.can("flows.write") and not principal.can("billing.view")


async def test_code_reuse_fails_and_revokes_what_the_first_use_issued(idp):
    client = await idp.register()
    code, verifier = await idp.code_for(client, scope="openid offline_access")
    form = dict(grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)
    first = await (await idp.token(client, **form)).json()
    second = await idp.token(client, **form)
    assert second.status == 400
    assert (await second.json())["error"] == "invalid_grant"
    refreshed = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert (await refreshed.json())["error"] == "invalid_grant"
    info = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {first['access_token']}"})
    assert info.status == 401


async def test_expired_code_wrong_redirect_uri_wrong_client_and_wrong_verifier_are_invalid_grant(idp):
    client = await idp.register()
    other = await idp.register(client_name="Other")
    code, verifier = await idp.code_for(client)
    for form, who in [({"redirect_uri": "http://localhost:9999/other"}, client), ({"code_verifier": "x" * 50}, client), ({}, other)]:
        response = await idp.token(who, **{"grant_type": "authorization_code", "code": code, "redirect_uri": idp.redirect, "code_verifier": verifier, **form})
        assert response.status == 400, form
        assert (await response.json())["error"] == "invalid_grant", form
    code, verifier = await idp.code_for(client)
    async with idp.app[SERVICES].db.session() as session:
        row = await session.scalar(select(AuthorizationCode).where(AuthorizationCode.used_at.is_(None)))
    assert abs((row.expires_at - row.created_at).total_seconds() - 60) < 1  # 60-second codes (3.5)
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(update(AuthorizationCode).where(AuthorizationCode.used_at.is_(None)).values(expires_at=utcnow() - timedelta(seconds=1)))
    response = await idp.token(client, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)
    assert (await response.json())["error"] == "invalid_grant"


async def test_pkce_rules_verifier_without_challenge_and_missing_verifier(idp):
    relaxed = await idp.register(require_pkce=False)
    code, _ = await idp.code_for(relaxed, code_challenge=None)
    response = await idp.token(relaxed, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier="v" * 50)
    assert (await response.json())["error"] == "invalid_grant"
    code, _ = await idp.code_for(relaxed, code_challenge=None)
    response = await idp.token(relaxed, grant_type="authorization_code", code=code, redirect_uri=idp.redirect)
    assert response.status == 200  # a confidential client that opted out of PKCE
    strict = await idp.register()
    code, _ = await idp.code_for(strict)
    response = await idp.token(strict, grant_type="authorization_code", code=code, redirect_uri=idp.redirect)
    assert (await response.json())["error"] == "invalid_grant"


@pytest.mark.slow  # about 2 s (setup and call)
async def test_refresh_returns_the_same_token_a_fresh_id_token_and_accepts_a_scope_subset(idp):
    client = await idp.register()
    first = await idp.tokens(client, scope="openid email offline_access")
    time.sleep(1.05)
    response = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert response.status == 200
    body = await response.json()
    assert body["refresh_token"] == first["refresh_token"]
    assert body["id_token"] != first["id_token"]
    new_claims = (await decode(idp, body["id_token"])).claims
    old_claims = (await decode(idp, first["id_token"])).claims
    assert new_claims["iat"] > old_claims["iat"] and new_claims["sub"] == old_claims["sub"] and new_claims["auth_time"] == old_claims["auth_time"]
    subset = await (await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], scope="openid")).json()
    assert subset["scope"] == "openid" and "email" not in (await decode(idp, subset["access_token"])).claims
    wider = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], scope="openid profile")
    assert wider.status == 400 and (await wider.json())["error"] == "invalid_scope"


async def test_refresh_token_presented_by_another_client_is_invalid_grant(idp):
    client = await idp.register()
    other = await idp.register(client_name="Other")
    tokens = await idp.tokens(client, scope="openid offline_access")
    response = await idp.token(other, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert response.status == 400 and (await response.json())["error"] == "invalid_grant"


async def test_public_client_rotates_refresh_tokens_and_reuse_revokes_the_grant(idp):
    public = await idp.register(token_endpoint_auth_method="none")
    tokens = await idp.tokens(public, scope="openid offline_access")
    rotated = await (await idp.token(public, grant_type="refresh_token", refresh_token=tokens["refresh_token"])).json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    reuse = await idp.token(public, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert (await reuse.json())["error"] == "invalid_grant"
    after = await idp.token(public, grant_type="refresh_token", refresh_token=rotated["refresh_token"])
    assert (await after.json())["error"] == "invalid_grant"  # the whole grant was revoked


async def test_client_credentials_for_a_workspace_client_opens_the_connect_api(idp):
    from patchbay.core.identity.clients import create_client, validate_metadata

    metadata = validate_metadata({"client_name": "Backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"]})
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, metadata, workspace_id=idp.workspace["workspace_id"])
    basic = base64.b64encode(f"{issued.row.client_id}:{issued.client_secret}".encode()).decode()
    response = await idp.http.post("/api/v1/oidc/token", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {basic}"})
    assert response.status == 200, await response.text()
    body = await response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
    claims = (await decode(idp, body["access_token"])).claims
    assert claims["sub"] == issued.row.client_id and claims["organization_id"] == idp.workspace["workspace_id"]
    request = make_mocked_request("GET", "/connect/v1/flows", headers={"Authorization": body["access_token"]}, app=idp.app)
    principal = await authenticate(request)
    assert principal.workspace_id == idp.workspace["workspace_id"] and principal.permissions == ROLE_PERMISSIONS["admin"]


async def test_basic_client_credentials_are_not_verified_as_an_access_token(idp, monkeypatch):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    keys = idp.app[SERVICES].signing_keys
    verified = []
    monkeypatch.setattr(keys, "verify", lambda token, verify=keys.verify: verified.append(token) or verify(token))
    basic = base64.b64encode(f"{client['client_id']}:{client['client_secret']}".encode()).decode()
    response = await idp.http.post("/api/v1/oidc/token", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {basic}"})
    assert response.status == 200, await response.text()
    assert verified == []
    for authorization in (f"Basic {basic}", f"Digest {basic}"):
        request = make_mocked_request("GET", "/connect/v1/flows", headers={"Authorization": authorization}, app=idp.app)
        assert await authenticate(request) is None
    assert verified == []


async def test_client_authentication_errors_are_401_invalid_client(idp):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    for form in ({"client_secret": "wrong"}, {"client_id": "nobody", "client_secret": "x"}, {"client_secret": None}):
        response = await idp.http.post(
            "/api/v1/oidc/token",
            data={k: v for k, v in {"grant_type": "client_credentials", "client_id": client["client_id"], **form}.items() if v is not None},
        )
        assert response.status == 401, form
        body = await response.json()
        assert body["error"] == "invalid_client" and body["error_description"]
        assert response.headers["Cache-Control"] == "no-store"


async def test_public_clients_cannot_use_client_credentials_and_other_grant_errors(idp):
    public = await idp.register(token_endpoint_auth_method="none")
    response = await idp.http.post("/api/v1/oidc/token", data={"grant_type": "client_credentials", "client_id": public["client_id"]})
    assert response.status in (400, 401) and (await response.json())["error"] in ("unauthorized_client", "invalid_client")
    client = await idp.register()
    response = await idp.token(client, grant_type="password", username="a", password="b")
    assert response.status == 400 and (await response.json())["error"] == "unsupported_grant_type"
    response = await idp.token(client, grant_type="client_credentials")
    assert response.status == 400 and (await response.json())["error"] == "unauthorized_client"
    response = await idp.token(client, grant_type="authorization_code", redirect_uri=idp.redirect)
    assert response.status == 400 and (await response.json())["error"] == "invalid_request"
    response = await idp.http.post(
        "/api/v1/oidc/token", data=[("grant_type", "authorization_code"), ("code", "a"), ("code", "b"), ("client_id", client["client_id"])]
    )
    assert (await response.json())["error"] == "invalid_request"


async def test_per_client_lifetimes(idp):
    client = await idp.register(access_token_ttl=120, refresh_token_ttl=600)
    body = await idp.tokens(client, scope="openid offline_access")
    assert body["expires_in"] == 120
    for token in (body["access_token"], body["id_token"]):
        claims = (await decode(idp, token)).claims
        assert claims["exp"] - claims["iat"] == 120
    async with idp.app[SERVICES].db.session() as session:
        row = await session.scalar(select(RefreshToken))
    assert abs((row.expires_at - row.created_at).total_seconds() - 600) < 2


async def test_server_errors_answer_500_in_the_oauth_shape(idp, monkeypatch):

    def explode(_request):
        raise RuntimeError("boom")

    monkeypatch.setattr(idp.app[SERVICES].identity.server, "create_token_response", explode)
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    response = await idp.token(client, grant_type="client_credentials")
    assert response.status == 500
    body = await response.json()
    assert body["error"] == "server_error" and "boom" not in body["error_description"]
