"""Userinfo, introspection (RFC 7662) and revocation (RFC 7009) per 4.23, 5B and 7B."""

import time

from patchbay.core.appkeys import SERVICES


def auth(client):
    return {"client_id": client["client_id"], "client_secret": client["client_secret"]}


async def test_userinfo_claims_headers_and_errors(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid email phone")
    for method in ("GET", "POST"):
        response = await idp.http.request(method, "/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.headers["Cache-Control"] == "no-store" and response.headers["Pragma"] == "no-cache"
        assert await response.json() == {"sub": idp.user["id"], "email": "ada@example.com", "email_verified": True, "phone_number": "+44 20 7946 0000"}
    missing = await idp.http.get("/api/v1/oidc/userinfo")
    assert missing.status == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    broken = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": "Bearer abc.def.ghi"})
    assert broken.status == 401
    challenge = broken.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"') and "error_description=" in challenge
    assert (await broken.json())["error"] == "invalid_token"


async def test_introspection_of_access_and_refresh_tokens(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid offline_access")
    response = await idp.http.post("/api/v1/oidc/introspect", data={**auth(client), "token": tokens["access_token"]})
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert body["active"] is True
    for field in ("scope", "client_id", "token_type", "exp", "iat", "sub", "iss", "aud"):
        assert field in body, field
    assert body["sub"] == idp.user["id"] and body["client_id"] == client["client_id"] and body["iss"] == idp.app[SERVICES].settings.resolved_issuer
    response = await idp.http.post("/api/v1/oidc/introspect", data={**auth(client), "token": tokens["refresh_token"], "token_type_hint": "refresh_token"})
    body = await response.json()
    assert body["active"] is True and body["scope"] == "openid offline_access"
    for field in ("scope", "client_id", "token_type", "exp", "iat", "sub", "iss", "aud"):  # spec 4.23, refresh tokens too
        assert field in body, field
    assert isinstance(body["iat"], int) and abs(body["iat"] - time.time()) < 300 and body["iat"] < body["exp"]
    for token in ("garbage", tokens["access_token"][:-4] + "AAAA"):
        response = await idp.http.post("/api/v1/oidc/introspect", data={**auth(client), "token": token})
        assert await response.json() == {"active": False}
    other = await idp.register(client_name="Other")
    response = await idp.http.post("/api/v1/oidc/introspect", data={**auth(other), "token": tokens["access_token"]})
    assert await response.json() == {"active": False}
    response = await idp.http.post(
        "/api/v1/oidc/introspect", data={"client_id": client["client_id"], "client_secret": "wrong", "token": tokens["access_token"]}
    )
    assert response.status == 401 and (await response.json())["error"] == "invalid_client"
    response = await idp.http.post("/api/v1/oidc/introspect", data=auth(client))
    assert response.status == 400 and (await response.json())["error"] == "invalid_request"


async def test_revocation_revokes_refresh_tokens_only_and_always_answers_200_empty(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid offline_access")
    response = await idp.http.post("/api/v1/oidc/revoke", data={**auth(client), "token": tokens["access_token"], "token_type_hint": "access_token"})
    assert response.status == 200 and await response.read() == b""
    still = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert still.status == 200  # access tokens cannot be revoked; they expire
    response = await idp.http.post("/api/v1/oidc/revoke", data={**auth(client), "token": tokens["refresh_token"]})
    assert response.status == 200 and await response.read() == b""
    introspected = await idp.http.post("/api/v1/oidc/introspect", data={**auth(client), "token": tokens["refresh_token"]})
    assert await introspected.json() == {"active": False}
    refreshed = await idp.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert (await refreshed.json())["error"] == "invalid_grant"
    unknown = await idp.http.post("/api/v1/oidc/revoke", data={**auth(client), "token": "never-issued"})
    assert unknown.status == 200 and await unknown.read() == b""
    bad = await idp.http.post("/api/v1/oidc/revoke", data={"client_id": client["client_id"], "client_secret": "wrong", "token": "x"})
    assert bad.status == 401 and (await bad.json())["error"] == "invalid_client"


async def test_userinfo_accepts_the_token_in_a_form_body(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid email")
    response = await idp.http.post("/api/v1/oidc/userinfo", data={"access_token": tokens["access_token"]})
    assert response.status == 200 and (await response.json())["email"] == "ada@example.com"
    client_token = await idp.register(grant_types=["client_credentials"], scope="openid")
    service = await (await idp.token(client_token, grant_type="client_credentials")).json()
    response = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {service['access_token']}"})
    assert response.status == 401  # a client_credentials token has no user
