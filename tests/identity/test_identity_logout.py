"""RP-initiated logout (4.23 end-session, RP-Initiated Logout 1.0)."""


async def test_end_session_revokes_refresh_tokens_clears_the_session_and_returns_with_state(idp):
    client = await idp.register(redirect_uris=[idp.redirect, "http://localhost:9999/other"])
    tokens = await idp.tokens(client, scope="openid offline_access")
    response = await idp.http.get(
        "/api/v1/oidc/end-session",
        params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "http://localhost:9999/logged-out", "state": "bye"},
        allow_redirects=False,
    )
    assert response.status == 302
    signout = response.headers["Location"]
    assert signout.startswith("/api/v1/oidc/signout")
    response = await idp.http.get(signout, allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "http://localhost:9999/logged-out?state=bye"
    assert 'pb_idp_session=""' in response.headers["Set-Cookie"] or "Max-Age=0" in response.headers["Set-Cookie"]
    refreshed = await idp.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert (await refreshed.json())["error"] == "invalid_grant"
    _, challenge = idp.pkce_pair()
    again = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", prompt="none")
    assert idp.query_of(again.headers["Location"])["error"] == "login_required"


async def test_end_session_refuses_foreign_return_urls_and_bad_hints(idp):
    client = await idp.register()
    tokens = await idp.tokens(client)
    response = await idp.http.get(
        "/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "https://evil.example/"}, allow_redirects=False
    )
    assert response.status == 400 and "Location" not in response.headers
    response = await idp.http.get("/api/v1/oidc/end-session", params={"id_token_hint": "bad"}, allow_redirects=False)
    assert response.status == 400
    other = await idp.register(client_name="Other")
    response = await idp.http.get(
        "/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"], "client_id": other["client_id"]}, allow_redirects=False
    )
    assert response.status == 400
    page = await idp.http.get(
        "/api/v1/oidc/end-session", params={"client_id": client["client_id"], "post_logout_redirect_uri": "http://localhost:9999/bye"}, allow_redirects=False
    )
    assert page.status == 200 and "Location" not in page.headers  # no hint: the user confirms first
    response = await idp.http.post("/api/v1/oidc/signout", data=idp.form_fields(await page.text()), allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "http://localhost:9999/bye"
    page = await idp.http.get("/api/v1/oidc/end-session")
    assert page.status == 200 and "signed out" in (await page.text()).lower()
