"""The ``register_federated_login`` hook: a third-party protocol named by ``[federation.<name>]``
drives the round trip (the real upstream server test is test_identity_federation.py)."""

from urllib.parse import parse_qs, urlencode, urlsplit

from patchbay import hookimpl


class FakeProtocol:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = []

    async def authorization_url(self, *, config, http, redirect_uri, state, nonce, code_challenge):
        self.calls.append(("authorize", config["client_id"], redirect_uri))
        return "https://upstream.example/authorize?" + urlencode({"state": state, "nonce": nonce, "code_challenge": code_challenge})

    async def complete(self, *, config, http, redirect_uri, code, code_verifier, nonce):
        self.calls.append(("complete", code, bool(code_verifier), nonce))
        if self.fail:
            raise ValueError("bad upstream token")
        return {"sub": "upstream-42", "email": "ada@example.com", "email_verified": True, "name": "Ada"}


class FakePlugin:
    def __init__(self, protocol) -> None:
        self.protocol = protocol

    @hookimpl
    def register_federated_login(self, register):
        register("fake", self.protocol)


async def test_a_registered_protocol_runs_the_federated_round_trip(make_idp):
    protocol = FakeProtocol()
    idp = await make_idp(plugins=[FakePlugin(protocol)], federation={"corp": {"protocol": "fake", "client_id": "pb"}})
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", kc_idp_hint="corp")
    upstream = response.headers["Location"]
    assert upstream.startswith("https://upstream.example/authorize")
    upstream_state = parse_qs(urlsplit(upstream).query)["state"][0]
    callback = await idp.http.get("/api/v1/oidc/federation/callback", params={"code": "up-code", "state": upstream_state}, allow_redirects=False)
    assert callback.status == 302
    consent = await idp.consent(callback.headers["Location"])
    answer = idp.query_of(consent.headers["Location"])
    assert answer["state"] == "st4te" and "code" in answer
    assert protocol.calls[1][:3] == ("complete", "up-code", True)
    # the verified email matched the existing user, who is now signed in
    info_response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", prompt="none")
    assert "code" in idp.query_of(info_response.headers["Location"])


async def test_a_refused_upstream_login_answers_access_denied_and_a_logged_in_user_ignores_the_hint(make_idp):
    protocol = FakeProtocol(fail=True)
    idp = await make_idp(plugins=[FakePlugin(protocol)], federation={"corp": {"protocol": "fake", "client_id": "pb"}})
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", idp="corp")
    state = parse_qs(urlsplit(response.headers["Location"]).query)["state"][0]
    callback = await idp.http.get("/api/v1/oidc/federation/callback", params={"code": "c", "state": state}, allow_redirects=False)
    answer = idp.query_of(callback.headers["Location"])
    assert answer["error"] == "access_denied" and answer["state"] == "st4te"
    await idp.code_for(client)  # log in with a password
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", idp="corp")
    assert "code" in idp.query_of(response.headers["Location"])  # authenticated: the hint is ignored


async def test_idp_wins_over_kc_idp_hint(make_idp):
    corp, other = FakeProtocol(), FakeProtocol()

    class Two:
        @hookimpl
        def register_federated_login(self, register):
            register("corp-protocol", corp)
            register("other-protocol", other)

    idp = await make_idp(
        plugins=[Two()], federation={"corp": {"protocol": "corp-protocol", "client_id": "a"}, "other": {"protocol": "other-protocol", "client_id": "b"}}
    )
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", idp="corp", kc_idp_hint="other")
    assert response.headers["Location"].startswith("https://upstream.example/authorize")
    assert [call[1] for call in corp.calls] == ["a"] and other.calls == []
