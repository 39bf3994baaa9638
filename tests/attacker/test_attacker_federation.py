"""Attacks through federated login (issue 22, point 4): an upstream OpenID provider the operator
configured says a victim's email address is "verified" with something other than JSON ``true``
(some upstreams send the string ``"false"``); the login must not land in the victim's account.

The upstream is a real OpenID provider on a local port (discovery, an authorization endpoint that
approves at once, a token endpoint signing RS256 ID tokens with the request's nonce, and JWKS), so
patchbay's built-in ``oidc`` federation runs its whole round trip over HTTP."""

from __future__ import annotations

import importlib.util
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import RSAKey
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.identity.models import FederatedIdentity
from patchbay.core.identity.routes_federation import CALLBACK
from patchbay.core.users.models import User

_spec = importlib.util.spec_from_file_location("conftest_sessions", Path(__file__).with_name("conftest_sessions.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)  # tests/ is no package (--import-mode=importlib): load the helper by path
make_idp = helpers.make_idp  # fixture

UPSTREAM_CLIENT = {"client_id": "patchbay-downstream", "client_secret": "upstream secret"}


def upstream_provider(claims: dict[str, Any]) -> web.Application:
    """An OpenID provider that signs every user in as ``claims`` (plus iss, aud, exp, nonce)."""
    key = RSAKey.generate_key(2048, parameters={"kid": "upstream-1", "use": "sig", "alg": "RS256"})
    codes: dict[str, str] = {}  # code -> nonce of its authorization request

    def issuer(request: web.Request) -> str:
        return f"http://{request.host}"

    async def discovery(request: web.Request) -> web.Response:
        base = issuer(request)
        return web.json_response(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "jwks_uri": f"{base}/jwks",
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )

    async def authorize(request: web.Request) -> web.Response:
        code = secrets.token_urlsafe(16)
        codes[code] = request.query["nonce"]
        raise web.HTTPFound(request.query["redirect_uri"] + "?" + urlencode({"code": code, "state": request.query["state"]}))

    async def token(request: web.Request) -> web.Response:
        form = await request.post()
        nonce = codes.pop(form.get("code", ""), None)
        if nonce is None or (form.get("client_id"), form.get("client_secret")) != tuple(UPSTREAM_CLIENT.values()):
            return web.json_response({"error": "invalid_grant"}, status=400)
        now = int(time.time())
        payload = {**claims, "iss": issuer(request), "aud": UPSTREAM_CLIENT["client_id"], "iat": now, "exp": now + 300, "nonce": nonce}
        id_token = jwt.encode({"alg": "RS256", "kid": "upstream-1"}, payload, key)
        return web.json_response({"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "id_token": id_token})

    async def jwks(request: web.Request) -> web.Response:
        return web.json_response({"keys": [key.as_dict(private=False)]})

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", discovery)
    app.router.add_get("/authorize", authorize)
    app.router.add_post("/token", token)
    app.router.add_get("/jwks", jwks)
    return app


async def federated_sign_in(make_idp, aiohttp_server, database_url: str, claims: dict[str, Any]):
    """Start an authorization with ``idp=upstream``, walk the upstream over HTTP and return from it
    to patchbay's callback; the driver (its browser now holds patchbay's session cookie)."""
    upstream = await aiohttp_server(upstream_provider(claims))
    idp = await make_idp(database_url=database_url, federation={"upstream": {"issuer": str(upstream.make_url("")).rstrip("/"), **UPSTREAM_CLIENT}})
    await sign_in_through_upstream(idp)
    return idp


async def sign_in_through_upstream(idp, name: str = "upstream") -> None:
    """Walk an authorization with ``idp=<name>`` through that upstream back to patchbay's callback."""
    client = await idp.register()
    _, challenge = idp.pkce_pair()
    started = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", idp=name)
    assert started.status == 302
    async with aiohttp.ClientSession() as browser, browser.get(started.headers["Location"], allow_redirects=False) as upstream_answer:
        back = upstream_answer.headers["Location"]
    assert urlsplit(back).path == CALLBACK
    callback = await idp.http.get(CALLBACK, params=idp.query_of(back), allow_redirects=False)
    assert callback.status == 302, await callback.text()
    assert "error" not in idp.query_of(callback.headers["Location"]), callback.headers["Location"]


async def signed_in_user(idp) -> dict[str, Any]:
    response = await idp.http.get("/api/v1/users/me")
    assert response.status == 200, await response.text()
    return await response.json()


@pytest.mark.parametrize("email_verified", ["false", "0", 1, "true", "yes"])
async def test_an_upstream_email_verified_that_is_not_json_true_does_not_link_the_victims_account(make_idp, aiohttp_server, database_url, email_verified):
    claims = {"sub": "attacker-at-upstream", "email": "ADA@example.com", "email_verified": email_verified, "name": "Not Ada"}
    idp = await federated_sign_in(make_idp, aiohttp_server, database_url, claims)
    me = await signed_in_user(idp)
    assert me["id"] != idp.user["id"]
    assert me["email"].endswith("@federated.invalid") and me["emailVerified"] is False
    async with idp.app[SERVICES].db.session() as session:
        victim = await session.get(User, idp.user["id"])
    assert (victim.email, victim.name) == ("ada@example.com", "Ada Lovelace")


@pytest.mark.both_databases
async def test_an_upstream_email_verified_true_links_the_account_of_that_email(make_idp, aiohttp_server, database_url):
    claims = {"sub": "ada-at-upstream", "email": "ada@example.com", "email_verified": True, "name": "Ada"}
    idp = await federated_sign_in(make_idp, aiohttp_server, database_url, claims)
    assert (await signed_in_user(idp))["id"] == idp.user["id"]


async def test_a_new_user_is_verified_only_on_json_true(make_idp, aiohttp_server, database_url):
    claims = {"sub": "newcomer", "email": "newcomer@example.com", "email_verified": "false", "name": "New Comer"}
    idp = await federated_sign_in(make_idp, aiohttp_server, database_url, claims)
    me = await signed_in_user(idp)
    assert (me["email"], me["emailVerified"]) == ("newcomer@example.com", False)


async def test_an_account_a_platform_client_made_for_someone_elses_address_is_not_handed_to_its_owner(make_idp, aiohttp_server, database_url):
    """Account pre-hijacking: a workspace-bound platform client creates a user for an address it does
    not own (it cannot verify it) with a password it knows; when the address's owner later signs in
    through the upstream that verifies it, the login must not land in that account."""
    upstream = await aiohttp_server(upstream_provider({"sub": "owner-at-upstream", "email": "newhire@victimcorp.example", "email_verified": True}))
    idp = await make_idp(database_url=database_url, federation={"upstream": {"issuer": str(upstream.make_url("")).rstrip("/"), **UPSTREAM_CLIENT}})
    body = {"client_name": "Tenant backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, validate_metadata(body), workspace_id=idp.workspace["workspace_id"], trust="platform")
    attacker = {"x-client-id": issued.row.client_id, "x-client-secret": issued.client_secret}
    made = await idp.http.post("/api/v1/users", json={"email": "NewHire@victimcorp.example", "password": "attacker knows this"}, headers=attacker)
    assert made.status == 201, await made.text()
    premade = await made.json()
    assert premade["emailVerified"] is False
    await sign_in_through_upstream(idp)
    owner = await signed_in_user(idp)
    assert owner["id"] != premade["id"]
    async with idp.app[SERVICES].db.session() as session:
        link = await session.scalar(select(FederatedIdentity).where(FederatedIdentity.subject == "owner-at-upstream"))
    assert link.user_id == owner["id"]


async def test_an_account_an_upstream_did_not_verify_is_not_handed_to_the_addresss_owner(make_idp, aiohttp_server, database_url):
    """The same through federation alone: the attacker signs in through an upstream that does not
    verify addresses, which makes an unverified account of the victim's address linked to the
    attacker's upstream identity; the owner's later sign-in through an upstream that verifies it
    must not land in that account (the attacker's link would share it)."""
    shady = await aiohttp_server(upstream_provider({"sub": "attacker", "email": "newhire@victimcorp.example", "email_verified": False}))
    honest = await aiohttp_server(upstream_provider({"sub": "owner", "email": "newhire@victimcorp.example", "email_verified": True}))
    tables = {name: {"issuer": str(server.make_url("")).rstrip("/"), **UPSTREAM_CLIENT} for name, server in (("shady", shady), ("upstream", honest))}
    idp = await make_idp(database_url=database_url, federation=tables)
    await sign_in_through_upstream(idp, "shady")
    attackers = await signed_in_user(idp)
    assert (attackers["email"], attackers["emailVerified"]) == ("newhire@victimcorp.example", False)
    idp.http.session.cookie_jar.clear()
    await sign_in_through_upstream(idp)
    assert (await signed_in_user(idp))["id"] != attackers["id"]
