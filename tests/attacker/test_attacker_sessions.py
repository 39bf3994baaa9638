"""Attacks on the identity provider's sign-in sessions, sign-out and login page (issue 11, part 2),
each sent over HTTP as an outsider would."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import stat
import time
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.identity.models import Grant
from patchbay.core.security.secrets import SecretBox, load_or_create_secrets
from patchbay.core.users.models import User
from patchbay.core.users.service import create_user

_spec = importlib.util.spec_from_file_location("conftest_sessions", Path(__file__).with_name("conftest_sessions.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)  # tests/ is no package (--import-mode=importlib): load the helper by path
idp, make_idp = helpers.idp, helpers.make_idp  # fixtures
prompt_none, signed_in = helpers.prompt_none, helpers.signed_in


def replay(idp, cookie: str) -> None:
    """Put a captured session cookie back into the test browser."""
    idp.http.session.cookie_jar.update_cookies({"pb_idp_session": cookie}, idp.http.make_url("/"))


async def test_a_session_cookie_captured_before_sign_out_is_dead_after_it(idp):
    client = await idp.register()
    cookie, tokens = await signed_in(idp, client)
    response = await idp.http.get("/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"]}, allow_redirects=False)
    assert response.status == 302
    replay(idp, cookie)
    assert (await prompt_none(idp, client))["error"] == "login_required"


async def test_signing_in_again_ends_the_previous_session_of_the_browser(idp):
    client = await idp.register()
    old_cookie, _ = await signed_in(idp, client)
    again = await idp.authorize(client, prompt="login", code_challenge=idp.pkce_pair()[1], code_challenge_method="S256")
    assert (await idp.login(again.headers["Location"])).status == 303
    assert "code" in await prompt_none(idp, client)  # the new session works
    replay(idp, old_cookie)
    assert (await prompt_none(idp, client))["error"] == "login_required"


async def test_end_session_revokes_the_grants_issued_in_that_session(idp):
    client = await idp.register()
    _, tokens = await signed_in(idp, client)
    await idp.http.get("/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"]}, allow_redirects=False)
    async with idp.app[SERVICES].db.session() as session:
        grants = (await session.scalars(select(Grant).where(Grant.client_id == client["client_id"]))).all()
    assert grants and all(grant.revoked_at is not None for grant in grants)


async def test_a_password_change_through_the_platform_api_ends_the_users_sessions(idp):
    client = await idp.register()
    await signed_in(idp, client)
    metadata = validate_metadata(
        {"client_name": "Backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    )
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, metadata, trust="platform")
    backend = {"client_id": issued.row.client_id, "client_secret": issued.client_secret}
    token = (await (await idp.token(backend, grant_type="client_credentials")).json())["access_token"]
    changed = await idp.http.patch(f"/api/v1/users/{idp.user['id']}", json={"password": "a brand new password"}, headers={"Authorization": f"Bearer {token}"})
    assert changed.status == 200, await changed.text()
    assert (await prompt_none(idp, client))["error"] == "login_required"


async def test_a_removed_user_has_no_session(idp):
    client = await idp.register()
    await signed_in(idp, client)
    assert "code" in await prompt_none(idp, client)
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(delete(User).where(User.id == idp.user["id"]))
    assert (await prompt_none(idp, client))["error"] == "login_required"


async def test_rotating_the_secret_key_keeps_sessions_and_signed_values_alive(idp):
    client = await idp.register()
    await signed_in(idp, client)
    response = await idp.authorize(client, prompt="login", code_challenge=idp.pkce_pair()[1], code_challenge_method="S256")
    login_page = response.headers["Location"]  # a signed interaction, signed with the old key
    configured = load_or_create_secrets(idp.app[SERVICES].settings.secret_key, idp.app[SERVICES].settings.data_dir)
    idp.app[SERVICES].secrets = idp.app[SERVICES].secrets = SecretBox(["a new first key", *configured])  # what a restart with the rotated list loads
    assert "code" in await prompt_none(idp, client)
    signed_in_again = await idp.login(login_page)  # the old interaction and CSRF signatures still verify
    assert signed_in_again.status == 303, await signed_in_again.text()


def test_signatures_of_a_retired_key_verify_and_new_ones_use_the_first_key():
    old, rotated = SecretBox(["old"]), SecretBox(["new", "old"])
    assert rotated.verify_signature(b"m", old.sign(b"m"))
    assert not old.verify_signature(b"m", rotated.sign(b"m"))
    assert not rotated.verify_signature(b"m", SecretBox(["other"]).sign(b"m"))


# -- RP-initiated logout ---------------------------------------------------------------------------


async def test_logout_without_hint_does_not_sign_out_or_redirect_to_a_self_registered_client(idp):
    victim_client = await idp.register()
    await signed_in(idp, victim_client)
    attacker = await idp.register(client_name="Evil", redirect_uris=["https://evil.example/cb"])
    response = await idp.http.get(
        "/api/v1/oidc/end-session", params={"client_id": attacker["client_id"], "post_logout_redirect_uri": "https://evil.example/"}, allow_redirects=False
    )
    assert response.status == 200 and "Location" not in response.headers
    assert "Sign out?" in await response.text()
    assert "code" in await prompt_none(idp, victim_client)  # still signed in until the user confirms


async def test_an_attackers_own_id_token_does_not_sign_out_or_redirect_another_users_browser(idp):
    victim_client = await idp.register()
    await signed_in(idp, victim_client)
    attacker = await idp.register(client_name="Evil", redirect_uris=["https://evil.example/cb"])
    async with idp.app[SERVICES].db.transaction() as session:
        mallory = await create_user(session, email="mallory@example.com", password="mallory's own password")
    settings = idp.app[SERVICES].settings
    hint = await idp.app[SERVICES].signing_keys.sign(
        {"iss": settings.resolved_issuer, "aud": attacker["client_id"], "sub": mallory.id, "iat": int(time.time()), "exp": int(time.time()) + 300}
    )  # what Mallory gets by signing in herself
    response = await idp.http.get(
        "/api/v1/oidc/end-session", params={"id_token_hint": hint, "post_logout_redirect_uri": "https://evil.example/"}, allow_redirects=False
    )
    assert response.status == 200 and "Location" not in response.headers
    page = await response.text()
    assert "Sign out?" in page and "https://evil.example" in page  # the user sees where it would go
    assert "code" in await prompt_none(idp, victim_client)


async def test_the_confirmation_form_cannot_be_posted_without_its_csrf_token(idp):
    client = await idp.register()
    await signed_in(idp, client)
    page = await idp.http.get("/api/v1/oidc/end-session", params={"client_id": client["client_id"]})
    fields = idp.form_fields(await page.text())
    forged = await idp.http.post("/api/v1/oidc/signout", data={"t": fields["t"]}, allow_redirects=False)
    assert forged.status == 403
    assert "code" in await prompt_none(idp, client)
    confirmed = await idp.http.post("/api/v1/oidc/signout", data=fields, allow_redirects=False)
    assert confirmed.status == 200
    assert (await prompt_none(idp, client))["error"] == "login_required"


async def test_a_hint_for_another_client_or_an_unregistered_return_url_is_refused(idp):
    client = await idp.register()
    _, tokens = await signed_in(idp, client)
    attacker = await idp.register(client_name="Evil", redirect_uris=["https://evil.example/cb"])
    for params in (
        {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "https://evil.example/"},
        {"id_token_hint": tokens["id_token"], "client_id": attacker["client_id"], "post_logout_redirect_uri": "https://evil.example/"},
    ):
        response = await idp.http.get("/api/v1/oidc/end-session", params=params, allow_redirects=False)
        assert response.status == 400 and "Location" not in response.headers
    assert "code" in await prompt_none(idp, client)


# -- login throttling ------------------------------------------------------------------------------


@pytest.mark.slow  # about 2 s (setup and call)
async def test_guessing_passwords_of_one_account_is_throttled_with_the_7b_answer(make_idp):
    from patchbay.core.settings import RATE_LIMIT_DEFAULTS

    idp = await make_idp(rate_limits={**{key: "off" for key in RATE_LIMIT_DEFAULTS}, "oidc_login_account": "5/minute", "oidc_login_account_hourly": "20/hour"})
    client = await idp.register()
    response = await idp.authorize(client, code_challenge=idp.pkce_pair()[1], code_challenge_method="S256")
    login = response.headers["Location"]
    statuses = [(await idp.login(login, password=f"guess {n}")).status for n in range(6)]
    assert statuses == [401] * 5 + [429]
    throttled = await idp.login(login)  # the right password is no way around it within the window
    assert throttled.status == 429
    assert await throttled.json() == {"error": "temporarily_unavailable", "error_description": "Rate limit exceeded"}
    assert int(throttled.headers["Retry-After"]) >= 1 and throttled.headers["X-RateLimit-Remaining"] == "0"
    other = await idp.login(login, email="nobody@example.com", password="guess")  # another account is not locked out by it
    assert other.status == 401


@pytest.mark.slow  # about 1 s (setup and call)
async def test_one_address_cannot_spray_many_accounts(make_idp):
    from patchbay.core.settings import RATE_LIMIT_DEFAULTS

    idp = await make_idp(rate_limits={**{key: "off" for key in RATE_LIMIT_DEFAULTS}, "oidc_login_ip": "3/minute"})
    client = await idp.register()
    response = await idp.authorize(client, code_challenge=idp.pkce_pair()[1], code_challenge_method="S256")
    statuses = [(await idp.login(response.headers["Location"], email=f"user{n}@example.com", password="guess")).status for n in range(4)]
    assert statuses == [401, 401, 401, 429]


def test_an_unknown_account_costs_a_password_hash_like_a_known_one(monkeypatch):
    from argon2 import PasswordHasher

    from patchbay.core.users import service

    checked = []

    class Recording(PasswordHasher):
        def verify(self, stored, password):
            checked.append(stored)
            return super().verify(stored, password)

    monkeypatch.setattr(service, "_hasher", Recording())
    hashed = service.hash_password("the right one")
    assert not service.verify_password(None, "anything")
    assert not service.verify_password(hashed, "wrong")
    assert service.verify_password(hashed, "the right one")
    assert len(checked) == 3 and checked[0].startswith("$argon2")


# -- client addresses, access logs, the generated key ----------------------------------------------


async def _login_statuses(idp, forwarded_for: list[str]) -> list[int]:
    client = await idp.register()
    response = await idp.authorize(client, code_challenge=idp.pkce_pair()[1], code_challenge_method="S256")
    page = await idp.http.get(response.headers["Location"])
    fields = idp.form_fields(await page.text())
    statuses = []
    for n, address in enumerate(forwarded_for):
        answer = await idp.http.post(
            "/api/v1/oidc/login",
            data={**fields, "email": f"user{n}@example.com", "password": "guess"},
            headers={"X-Forwarded-For": address},
            allow_redirects=False,
        )
        statuses.append(answer.status)
    return statuses


async def test_a_forged_x_forwarded_for_does_not_escape_the_per_address_limit(make_idp):
    from patchbay.core.settings import RATE_LIMIT_DEFAULTS

    idp = await make_idp(rate_limits={**{key: "off" for key in RATE_LIMIT_DEFAULTS}, "oidc_login_ip": "2/minute"})
    assert await _login_statuses(idp, ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) == [401, 401, 429]


async def test_behind_a_trusted_proxy_each_client_has_its_own_bucket(make_idp):
    from patchbay.core.settings import RATE_LIMIT_DEFAULTS

    idp = await make_idp(rate_limits={**{key: "off" for key in RATE_LIMIT_DEFAULTS}, "oidc_login_ip": "2/minute"}, trusted_proxies=["127.0.0.0/8"])
    # the right-most untrusted hop is the client; a hop the client wrote itself (left) changes nothing
    assert await _login_statuses(idp, ["203.0.113.1", "9.9.9.9, 203.0.113.1", "203.0.113.2", "203.0.113.1"]) == [401, 401, 401, 429]


def test_trusted_proxies_must_be_networks():
    from patchbay.core.settings import SettingsError, load_settings

    assert load_settings(environ={"PATCHBAY_TRUSTED_PROXIES": "10.0.0.0/8, ::1"}).trusted_proxies == ["10.0.0.0/8", "::1"]
    from patchbay.cli.main import serve

    assert "trusted_proxies" in {param.name for param in serve.params}
    assert load_settings(flags={"trusted_proxies": "192.0.2.0/24"}, environ={"PATCHBAY_TRUSTED_PROXIES": "10.0.0.0/8"}).trusted_proxies == ["192.0.2.0/24"]
    with pytest.raises(SettingsError, match="PATCHBAY_TRUSTED_PROXIES"):
        load_settings(environ={"PATCHBAY_TRUSTED_PROXIES": "not-a-network"})


async def test_invite_tokens_in_paths_never_reach_the_access_log(aiohttp_client, make_app, caplog):
    from aiohttp.test_utils import TestServer

    from patchbay.core.http.middleware import JsonAccessLogger

    server = TestServer(make_app())
    await server.start_server(access_log_class=JsonAccessLogger)  # as `patchbay serve` runs it
    client = await aiohttp_client(server)
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    secret = "inv1te-t0ken-s3cret"
    await client.get(f"/connect/v1/workspaces/invite/validate/{secret}")
    await client.get(f"/api/v1/oidc/authorize?client_id=x&code={secret}")
    await client.get("/connect/v1/providers/some-provider")  # ordinary route variables stay
    lines = [json.loads(record.getMessage()) for record in caplog.records if record.name == "aiohttp.access"]
    assert [line["path"] for line in lines] == [
        "/connect/v1/workspaces/invite/validate/[redacted]",
        "/api/v1/oidc/authorize",
        "/connect/v1/providers/some-provider",
    ]
    assert secret not in caplog.text


def test_the_generated_secret_key_file_is_private(tmp_path):
    previous = os.umask(0)  # even with a permissive umask
    try:
        (secret,) = load_or_create_secrets([], tmp_path)
    finally:
        os.umask(previous)
    path = tmp_path / "secret.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == secret
    assert load_or_create_secrets([], tmp_path) == [secret]
