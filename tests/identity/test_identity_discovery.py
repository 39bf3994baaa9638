"""Discovery, JWKS, CORS and the error shape of 7B for unknown routes and wrong methods."""

import time

from joserfc import jwt
from joserfc.jwk import KeySet

from patchbay.core.appkeys import SERVICES

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "86400",
}


async def test_discovery_document_fields_and_headers(idp):
    response = await idp.http.get("/.well-known/openid-configuration")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "public, max-age=3600"
    for name, value in CORS.items():
        assert response.headers[name] == value
    doc = await response.json()
    issuer = idp.app[SERVICES].settings.resolved_issuer
    assert doc["issuer"] == issuer
    for field, path in [
        ("authorization_endpoint", "authorize"),
        ("token_endpoint", "token"),
        ("userinfo_endpoint", "userinfo"),
        ("jwks_uri", "jwks"),
        ("registration_endpoint", "register"),
        ("revocation_endpoint", "revoke"),
        ("introspection_endpoint", "introspect"),
        ("end_session_endpoint", "end-session"),
    ]:
        assert doc[field] == f"{issuer}/api/v1/oidc/{path}"
    assert doc["scopes_supported"] == ["openid", "profile", "email", "phone", "organization", "permissions", "offline_access", "mcp"]
    assert doc["response_types_supported"] == ["code"]
    assert doc["response_modes_supported"] == ["query"]
    assert doc["grant_types_supported"] == ["authorization_code", "refresh_token", "client_credentials"]
    assert doc["subject_types_supported"] == ["public"]
    assert doc["id_token_signing_alg_values_supported"] == ["RS256"]
    assert {"client_secret_post", "client_secret_basic"} <= set(doc["token_endpoint_auth_methods_supported"])
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert set(doc["claims_supported"]) == {
        "sub",
        "iss",
        "aud",
        "exp",
        "iat",
        "nonce",
        "name",
        "given_name",
        "family_name",
        "email",
        "email_verified",
        "picture",
        "phone_number",
        "updated_at",
        "organization_id",
        "organization_memberships",
        "user_type",
        "permissions",
        "roles",
    }


async def test_every_advertised_endpoint_is_served(idp):
    doc = await (await idp.http.get("/.well-known/openid-configuration")).json()
    issuer = doc["issuer"]
    for field in (
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "jwks_uri",
        "registration_endpoint",
        "revocation_endpoint",
        "introspection_endpoint",
        "end_session_endpoint",
    ):
        path = doc[field][len(issuer) :]
        response = await idp.http.request("OPTIONS" if field != "authorization_endpoint" else "GET", path, allow_redirects=False)
        assert response.status != 404, field


async def test_jwks_keys_and_headers(idp):
    response = await idp.http.get("/api/v1/oidc/jwks")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "public, max-age=900"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    keys = (await response.json())["keys"]
    assert len(keys) == 1
    assert {k: keys[0][k] for k in ("kty", "alg", "use")} == {"kty": "RSA", "alg": "RS256", "use": "sig"}
    assert keys[0]["n"] and keys[0]["e"] and keys[0]["kid"]
    assert "d" not in keys[0]


async def test_rotation_keeps_previous_key_and_old_tokens_verify(idp):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    old = await (await idp.token(client, grant_type="client_credentials")).json()
    old_kid = idp.app[SERVICES].signing_keys.current_kid
    new_kid = await idp.app[SERVICES].signing_keys.rotate()
    keys = (await (await idp.http.get("/api/v1/oidc/jwks")).json())["keys"]
    assert {k["kid"] for k in keys} == {old_kid, new_kid}
    new = await (await idp.token(client, grant_type="client_credentials")).json()
    keyset = KeySet.import_key_set({"keys": keys})
    for token, kid in ((old["access_token"], old_kid), (new["access_token"], new_kid)):
        decoded = jwt.decode(token, keyset, algorithms=["RS256"])
        assert decoded.header["kid"] == kid
        assert decoded.claims["exp"] > time.time()
    introspected = await idp.http.post(
        "/api/v1/oidc/introspect", data={"token": old["access_token"], "client_id": client["client_id"], "client_secret": client["client_secret"]}
    )
    assert (await introspected.json())["active"] is True
    await idp.app[SERVICES].signing_keys.rotate()  # the first key retires: its tokens no longer verify
    introspected = await idp.http.post(
        "/api/v1/oidc/introspect", data={"token": old["access_token"], "client_id": client["client_id"], "client_secret": client["client_secret"]}
    )
    assert await introspected.json() == {"active": False}


async def test_cors_preflight_on_endpoints_but_not_on_authorize(idp):
    for path in (
        "/api/v1/oidc/token",
        "/api/v1/oidc/userinfo",
        "/api/v1/oidc/introspect",
        "/api/v1/oidc/revoke",
        "/api/v1/oidc/register",
        "/api/v1/oidc/jwks",
        "/api/v1/oidc/end-session",
        "/.well-known/openid-configuration",
    ):
        response = await idp.http.options(path, headers={"Origin": "https://spa.example", "Access-Control-Request-Method": "POST"})
        assert response.status == 204, path
        for name, value in CORS.items():
            assert response.headers[name] == value, (path, name)
    response = await idp.http.get("/api/v1/oidc/authorize", params={"client_id": "nope"})
    assert "Access-Control-Allow-Origin" not in response.headers


async def test_unknown_route_and_wrong_method_answer_oauth_errors(idp):
    response = await idp.http.get("/api/v1/oidc/nothing-here")
    assert response.status == 404
    body = await response.json()
    assert set(body) == {"error", "error_description"}
    response = await idp.http.get("/api/v1/oidc/token")
    assert response.status == 405
    body = await response.json()
    assert body["error"] == "invalid_request" and body["error_description"]
    response = await idp.http.delete("/api/v1/oidc/userinfo")
    assert response.status == 405
    assert set(await response.json()) == {"error", "error_description"}


async def test_error_answers_of_the_endpoints_carry_cors_too(idp):
    """A script on another origin reads the error of a refused call (the headers are set by the
    request pipeline for these paths, on success and error answers alike)."""
    refused = await idp.http.post("/api/v1/oidc/token", data={"grant_type": "password"})
    unknown = await idp.http.get("/api/v1/oidc/no-such-endpoint")
    assert (refused.status, unknown.status) == (400, 404)
    for response in (refused, unknown):
        assert "error" in await response.json()
        for name, value in CORS.items():
            assert response.headers[name] == value, (response.url, name)
