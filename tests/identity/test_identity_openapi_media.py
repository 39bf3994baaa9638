"""The identity provider's real answers along a whole sign-in (redirects, pages, protocol JSON,
the empty revocation) are what /openapi.json declares for them, on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("patchbay_tests_openapi_answers", Path(__file__).parents[1] / "core" / "openapi_answers.py")
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)


async def test_a_sign_in_answers_as_the_document_says(make_idp, database_url):
    idp = await make_idp(database_url=database_url)
    document = await (await idp.http.get("/openapi.json")).json()
    registered = await idp.http.post(
        "/api/v1/oidc/register",
        json={
            "client_name": "Doc app",
            "redirect_uris": [idp.redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "openid profile email organization permissions offline_access",
        },
    )
    await answers.assert_documented(document, "POST", "/api/v1/oidc/register", registered)
    client = await registered.json()
    verifier, challenge = idp.pkce_pair()
    pkce = {"code_challenge": challenge, "code_challenge_method": "S256", "scope": "openid profile email organization permissions offline_access"}

    to_login = await idp.authorize(client, **pkce)
    assert to_login.status == 302
    await answers.assert_documented(document, "GET", "/api/v1/oidc/authorize", to_login)
    login_page = await idp.http.get(to_login.headers["Location"])
    await answers.assert_documented(document, "GET", "/api/v1/oidc/login", login_page)
    to_consent = await idp.login(to_login.headers["Location"])
    assert to_consent.status == 303
    await answers.assert_documented(document, "POST", "/api/v1/oidc/login", to_consent)
    consent_page = await idp.http.get(to_consent.headers["Location"])
    await answers.assert_documented(document, "GET", "/api/v1/oidc/consent", consent_page)
    to_client = await idp.consent(to_consent.headers["Location"])
    assert to_client.status == 303
    await answers.assert_documented(document, "POST", "/api/v1/oidc/consent", to_client)

    code = idp.query_of(to_client.headers["Location"])["code"]
    issued = await idp.token(client, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)
    tokens = await issued.json()
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    for method in ("GET", "POST"):
        await answers.assert_documented(document, method, "/api/v1/oidc/userinfo", await idp.http.request(method, "/api/v1/oidc/userinfo", headers=bearer))
    secret = {"client_id": client["client_id"], "client_secret": client["client_secret"]}
    for token in (tokens["access_token"], tokens["refresh_token"], "not-a-token"):
        introspected = await idp.http.post("/api/v1/oidc/introspect", data={**secret, "token": token})
        assert introspected.status == 200
        await answers.assert_documented(document, "POST", "/api/v1/oidc/introspect", introspected)
    revoked = await idp.http.post("/api/v1/oidc/revoke", data={**secret, "token": tokens["refresh_token"]})
    assert revoked.status == 200
    await answers.assert_documented(document, "POST", "/api/v1/oidc/revoke", revoked)
    refused = await idp.http.post("/api/v1/oidc/revoke", data={"client_id": client["client_id"], "client_secret": "wrong", "token": "x"})
    assert refused.status == 401
    await answers.assert_documented(document, "POST", "/api/v1/oidc/revoke", refused)

    confirm = await idp.http.get("/api/v1/oidc/end-session")
    assert confirm.status == 200  # signed in, no hint: the page asks first
    await answers.assert_documented(document, "GET", "/api/v1/oidc/end-session", confirm)
    ended = await idp.http.get("/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"]}, allow_redirects=False)
    assert ended.status == 302
    await answers.assert_documented(document, "GET", "/api/v1/oidc/end-session", ended)
    signed_out = await idp.http.get(ended.headers["Location"], allow_redirects=False)
    assert signed_out.status == 200
    await answers.assert_documented(document, "GET", "/api/v1/oidc/signout", signed_out)
