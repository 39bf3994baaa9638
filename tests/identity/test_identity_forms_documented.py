"""A client that knows only /openapi.json signs in, uses and ends its tokens (issue 17): every form it
posts and every authorization or end-session query it sends is built from the fields the document
declares for that operation (a field the document does not name, or a required one left out, fails
the test), and each step succeeds, on SQLite and PostgreSQL. So the declared forms are the ones the
handlers read, and enough to drive them."""

from __future__ import annotations

import base64

from tests.core.openapi_forms import Documented

PREFIX = "/api/v1/oidc"


async def test_a_client_of_the_document_alone_signs_in_and_out(make_idp, database_url):
    idp = await make_idp(database_url=database_url)
    docs = Documented(await (await idp.http.get("/openapi.json")).json())
    client = await idp.register()
    verifier, challenge = idp.pkce_pair()
    authorization = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": idp.redirect,
        "state": "s1",
        "nonce": "n1",
        "scope": "openid email offline_access",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "prompt": "consent",
        "max_age": "3600",
        "login_hint": idp.user["email"],
        "response_mode": "query",
    }

    # the authorization as a POST form (the browser's form post), then the login and consent forms
    to_login = await idp.http.post(f"{PREFIX}/authorize", data=docs.form("POST", f"{PREFIX}/authorize", **authorization), allow_redirects=False)
    assert to_login.status == 303, await to_login.text()
    login_page = await idp.http.get(to_login.headers["Location"])
    hidden = idp.form_fields(await login_page.text())
    login = docs.form("POST", f"{PREFIX}/login", **hidden, email=idp.user["email"], password=idp.password)
    to_consent = await idp.http.post(f"{PREFIX}/login", data=login, allow_redirects=False)
    assert to_consent.status == 303 and "/consent" in to_consent.headers["Location"], await to_consent.text()
    consent_page = await idp.http.get(to_consent.headers["Location"])
    consent = docs.form("POST", f"{PREFIX}/consent", **idp.form_fields(await consent_page.text()), decision="allow")
    to_client = await idp.http.post(f"{PREFIX}/consent", data=consent, allow_redirects=False)
    assert to_client.status == 303
    answer = idp.query_of(to_client.headers["Location"])
    assert answer["state"] == "s1"

    # the token endpoint, the code then the refresh token (client_secret_post)
    secret = {"client_id": client["client_id"], "client_secret": client["client_secret"]}
    issued = await idp.http.post(
        f"{PREFIX}/token",
        data=docs.form(
            "POST", f"{PREFIX}/token", grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier, **secret
        ),
    )
    assert issued.status == 200, await issued.text()
    tokens = await issued.json()
    refreshed = await idp.http.post(
        f"{PREFIX}/token",
        data=docs.form("POST", f"{PREFIX}/token", grant_type="refresh_token", refresh_token=tokens["refresh_token"], scope="openid email", **secret),
    )
    assert refreshed.status == 200, await refreshed.text()
    tokens = await refreshed.json()

    # userinfo with the token in the form (RFC 6750 2.2), introspection, revocation
    claims = await idp.http.post(f"{PREFIX}/userinfo", data=docs.form("POST", f"{PREFIX}/userinfo", access_token=tokens["access_token"]))
    assert claims.status == 200 and (await claims.json())["email"] == idp.user["email"]
    looked_up = await idp.http.post(
        f"{PREFIX}/introspect", data=docs.form("POST", f"{PREFIX}/introspect", token=tokens["access_token"], token_type_hint="access_token", **secret)
    )
    assert looked_up.status == 200 and (await looked_up.json())["active"] is True
    revoked = await idp.http.post(
        f"{PREFIX}/revoke", data=docs.form("POST", f"{PREFIX}/revoke", token=tokens["refresh_token"], token_type_hint="refresh_token", **secret)
    )
    assert revoked.status == 200
    gone = await idp.http.post(f"{PREFIX}/introspect", data=docs.form("POST", f"{PREFIX}/introspect", token=tokens["refresh_token"], **secret))
    assert (await gone.json()) == {"active": False}

    # the authorization again as a GET query: signed in and consented, straight back with a code
    again = await idp.http.get(
        f"{PREFIX}/authorize", params=docs.query("GET", f"{PREFIX}/authorize", **{**authorization, "prompt": "none"}), allow_redirects=False
    )
    assert again.status == 302 and "code" in idp.query_of(again.headers["Location"]), again.headers.get("Location")

    # sign out without a hint: the confirmation page's form; then with the hint, as a POST form
    confirm = await idp.http.get(
        f"{PREFIX}/end-session",
        params=docs.query("GET", f"{PREFIX}/end-session", client_id=client["client_id"], post_logout_redirect_uri=idp.redirect, state="bye"),
    )
    assert confirm.status == 200
    signed_out = await idp.http.post(
        f"{PREFIX}/signout", data=docs.form("POST", f"{PREFIX}/signout", **idp.form_fields(await confirm.text())), allow_redirects=False
    )
    assert signed_out.status == 303 and signed_out.headers["Location"].endswith("state=bye")
    ended = await idp.http.post(
        f"{PREFIX}/end-session",
        data=docs.form(
            "POST", f"{PREFIX}/end-session", id_token_hint=tokens["id_token"], client_id=client["client_id"], post_logout_redirect_uri=idp.redirect, state="bye"
        ),
        allow_redirects=False,
    )
    assert ended.status == 303 and f"{PREFIX}/signout?t=" in ended.headers["Location"]
    back = await idp.http.get(
        f"{PREFIX}/signout", params=docs.query("GET", f"{PREFIX}/signout", **idp.query_of(ended.headers["Location"])), allow_redirects=False
    )
    assert back.status == 302 and back.headers["Location"] == f"{idp.redirect}?state=bye"


async def test_a_service_client_of_the_document_gets_a_token(make_idp, database_url):
    idp = await make_idp(database_url=database_url)
    docs = Documented(await (await idp.http.get("/openapi.json")).json())
    service = await idp.register(grant_types=["client_credentials"], scope="openid")
    form = docs.form("POST", f"{PREFIX}/token", grant_type="client_credentials", scope="openid")
    basic = base64.b64encode(f"{service['client_id']}:{service['client_secret']}".encode()).decode()  # client_secret_basic: no credentials in the form
    issued = await idp.http.post(f"{PREFIX}/token", data=form, headers={"Authorization": f"Basic {basic}"})
    assert issued.status == 200, await issued.text()
