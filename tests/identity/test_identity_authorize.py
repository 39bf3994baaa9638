"""The authorization endpoint, the login and consent pages (4.23 behaviour 1-6, OIDC Core)."""

import time

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from patchbay.core.appkeys import SERVICES
from patchbay.core.users.service import create_user


async def test_errors_before_redirect_uri_validation_are_json_400_and_never_redirect(idp):
    client = await idp.register()
    response = await idp.http.get(
        "/api/v1/oidc/authorize", params={"client_id": "unknown", "redirect_uri": idp.redirect, "response_type": "code"}, allow_redirects=False
    )
    assert response.status == 400 and "Location" not in response.headers
    assert (await response.json())["error"] == "invalid_client"
    response = await idp.authorize(client, redirect_uri="https://attacker.example/cb")
    assert response.status == 400 and "Location" not in response.headers
    assert (await response.json())["error"] == "invalid_request"
    response = await idp.authorize(client, redirect_uri=None)
    assert response.status == 400 and "Location" not in response.headers
    response = await idp.http.get(
        f"/api/v1/oidc/authorize?client_id={client['client_id']}&client_id=x&redirect_uri={idp.redirect}&response_type=code", allow_redirects=False
    )
    assert response.status == 400 and "Location" not in response.headers


async def test_errors_after_redirect_uri_validation_redirect_with_error_state_and_iss(idp):
    client = await idp.register()
    issuer = idp.app[SERVICES].settings.resolved_issuer
    cases = [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "openid address"}, "invalid_scope"),
        ({}, "invalid_request"),  # PKCE required by default: no code_challenge
        ({"code_challenge": "a" * 43, "code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": "a" * 43}, "invalid_request"),  # the method must be stated as S256
        ({"prompt": "none login", "code_challenge": "a" * 43, "code_challenge_method": "S256"}, "invalid_request"),
        ({"response_mode": "form_post", "code_challenge": "a" * 43, "code_challenge_method": "S256"}, "invalid_request"),
    ]
    for params, error in cases:
        response = await idp.authorize(client, **params)
        assert response.status == 302, params
        location = response.headers["Location"]
        assert location.startswith(idp.redirect), location
        answer = idp.query_of(location)
        assert answer["error"] == error, (params, answer)
        assert answer["state"] == "st4te" and answer["iss"] == issuer and answer["error_description"]
    response = await idp.http.get(
        f"/api/v1/oidc/authorize?client_id={client['client_id']}&redirect_uri={idp.redirect}&response_type=code&scope=openid&scope=email&state=s",
        allow_redirects=False,
    )
    assert idp.query_of(response.headers["Location"])["error"] == "invalid_request"


async def test_not_logged_in_goes_to_the_login_page_and_prompt_none_answers_login_required(idp):
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", idp="unknown-idp", unknown_param="x")
    assert response.status == 302
    assert response.headers["Location"].startswith("/api/v1/oidc/login?interaction=")
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", prompt="none")
    answer = idp.query_of(response.headers["Location"])
    assert answer["error"] == "login_required" and answer["state"] == "st4te"


async def test_login_and_consent_pages_are_branded_protected_and_answer_303(idp):
    idp.app[SERVICES].settings.branding.name = "Acme Identity"
    idp.app[SERVICES].settings.branding.primary_color = "#ff5500"
    client = await idp.register(client_name="Shop App")
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", login_hint="ada@example.com", scope="openid email")
    page = await idp.http.get(response.headers["Location"])
    text = await page.text()
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "Access-Control-Allow-Origin" not in page.headers
    assert "Acme Identity" in text and "#ff5500" in text and "Shop App" in text
    assert 'value="ada@example.com"' in text and '<label for="password">' in text and "<script" not in text
    fields = idp.form_fields(text)
    bad = await idp.http.post(
        "/api/v1/oidc/login",
        data={"interaction": fields["interaction"], "csrf": "forged", "email": "ada@example.com", "password": idp.password},
        allow_redirects=False,
    )
    assert bad.status == 403
    wrong = await idp.login(response.headers["Location"], password="wrong password")
    assert wrong.status == 401 and "not correct" in await wrong.text()
    ok = await idp.login(response.headers["Location"])
    assert ok.status == 303
    cookie = ok.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie  # issuer is http in tests
    consent_location = ok.headers["Location"]
    assert consent_location.startswith("/api/v1/oidc/consent")
    page = await idp.http.get(consent_location)
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "Your email address" in await page.text()
    decision = await idp.consent(consent_location)
    assert decision.status == 303
    answer = idp.query_of(decision.headers["Location"])
    assert answer["code"] and answer["state"] == "st4te" and answer["iss"] == idp.app[SERVICES].settings.resolved_issuer


async def test_consent_is_remembered_and_prompt_consent_asks_again(idp):
    client = await idp.register()
    await idp.code_for(client, scope="openid email")
    _, challenge = idp.pkce_pair()
    again = await idp.authorize(client, scope="openid email", code_challenge=challenge, code_challenge_method="S256")
    assert "code" in idp.query_of(again.headers["Location"])  # logged in and consented: straight back
    wider = await idp.authorize(client, scope="openid email profile", code_challenge=challenge, code_challenge_method="S256")
    assert wider.headers["Location"].startswith("/api/v1/oidc/consent")
    forced = await idp.authorize(client, scope="openid email", prompt="consent", code_challenge=challenge, code_challenge_method="S256")
    assert forced.headers["Location"].startswith("/api/v1/oidc/consent")
    silent = await idp.authorize(client, scope="openid email profile", prompt="none", code_challenge=challenge, code_challenge_method="S256")
    assert idp.query_of(silent.headers["Location"])["error"] == "consent_required"


async def test_denied_consent_returns_access_denied(idp):
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256")
    response = await idp.login(response.headers["Location"])
    denied = await idp.consent(response.headers["Location"], decision="deny")
    assert denied.status == 303
    answer = idp.query_of(denied.headers["Location"])
    assert answer["error"] == "access_denied" and answer["state"] == "st4te" and answer["iss"]


@pytest.mark.slow  # about 2 s (setup and call)
async def test_prompt_login_and_max_age_force_a_new_login_with_auth_time(idp):
    client = await idp.register()
    first = await idp.tokens(client)
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, prompt="login", code_challenge=challenge, code_challenge_method="S256")
    assert response.headers["Location"].startswith("/api/v1/oidc/login")
    response = await idp.authorize(client, max_age="0", code_challenge=challenge, code_challenge_method="S256")
    assert response.headers["Location"].startswith("/api/v1/oidc/login")
    response = await idp.authorize(client, max_age="3600", code_challenge=challenge, code_challenge_method="S256")
    assert "code" in idp.query_of(response.headers["Location"])
    time.sleep(1.1)
    tokens = await idp.tokens(client, max_age="1")  # a new login happens inside
    keys = KeySet.import_key_set(await (await idp.http.get("/api/v1/oidc/jwks")).json())
    before = jwt.decode(first["id_token"], keys).claims["auth_time"]
    after = jwt.decode(tokens["id_token"], keys).claims["auth_time"]
    assert after > before and abs(after - time.time()) < 5


async def test_id_token_hint_of_another_user_forces_login(idp):
    client = await idp.register()
    tokens = await idp.tokens(client)
    async with idp.app[SERVICES].db.transaction() as session:
        await create_user(session, email="bob@example.com", password="another password")
    _, challenge = idp.pkce_pair()
    same = await idp.authorize(client, id_token_hint=tokens["id_token"], prompt="none", code_challenge=challenge, code_challenge_method="S256")
    assert "code" in idp.query_of(same.headers["Location"])
    page = await idp.authorize(client, prompt="login", code_challenge=challenge, code_challenge_method="S256")
    switched = await idp.login(page.headers["Location"], email="bob@example.com", password="another password")
    assert switched.headers["Location"].startswith("/api/v1/oidc/consent")
    other = await idp.authorize(client, id_token_hint=tokens["id_token"], prompt="none", code_challenge=challenge, code_challenge_method="S256")
    assert idp.query_of(other.headers["Location"])["error"] == "login_required"
    broken = await idp.authorize(client, id_token_hint="not.a.jwt", code_challenge=challenge, code_challenge_method="S256")
    assert idp.query_of(broken.headers["Location"])["error"] == "invalid_request"


async def test_authorization_endpoint_accepts_post_and_answers_303(idp):
    client = await idp.register()
    await idp.code_for(client)
    _, challenge = idp.pkce_pair()
    response = await idp.http.post(
        "/api/v1/oidc/authorize",
        data={
            "client_id": client["client_id"],
            "redirect_uri": idp.redirect,
            "response_type": "code",
            "scope": "openid",
            "state": "p",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
        allow_redirects=False,
    )
    assert response.status == 303
    assert idp.query_of(response.headers["Location"])["state"] == "p"


async def test_expired_interaction_is_refused(idp):
    response = await idp.http.get("/api/v1/oidc/login", params={"interaction": "forged.value"})
    assert response.status == 400


async def test_https_issuer_marks_the_session_cookie_secure(make_idp):
    idp = await make_idp(issuer="https://id.example")
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256")
    page = await idp.http.get(response.headers["Location"])
    assert "Secure" in page.headers["Set-Cookie"]  # the CSRF cookie
    fields = idp.form_fields(await page.text())
    idp.http.session.cookie_jar.update_cookies({"pb_idp_csrf": page.cookies["pb_idp_csrf"].value})
    response = await idp.http.post("/api/v1/oidc/login", data={**fields, "email": "ada@example.com", "password": idp.password}, allow_redirects=False)
    assert response.status == 303
    session_cookie = response.cookies["pb_idp_session"]
    assert session_cookie["secure"] and session_cookie["httponly"] and session_cookie["samesite"] == "Lax"


async def test_request_objects_are_refused_as_unsupported(idp):
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    for name in ("request", "request_uri"):
        response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", **{name: "eyJ.x.y"})
        assert idp.query_of(response.headers["Location"])["error"] == f"{name}_not_supported"


async def test_scope_defaults_to_openid(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope=None)
    assert tokens["scope"] == "openid" and tokens["id_token"]
