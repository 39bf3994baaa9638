"""What the token endpoint keeps between requests to spend less per token (the verified secret,
the fixed claims of a service token, the request object, the answer's headers), and that each
follows the client it was made for: a rotated secret, a deleted client, changed permissions."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import types

import pytest
from authlib.consts import default_json_headers
from authlib.oauth2.rfc6749 import InsecureTransportError, OAuth2Request
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from multidict import CIMultiDict, MultiDict
from sqlalchemy import delete, update

from patchbay.core import shared_reads
from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import Client, create_client, validate_metadata
from patchbay.core.identity.http import to_response
from patchbay.core.identity.models import OidcClient
from patchbay.core.identity.server import AioOAuth2Request, Context, OAuthResult, ServiceClaims, access_token_claims
from patchbay.core.security.signing_keys import SigningThreads, UnsignedJWT

TOKEN = "/api/v1/oidc/token"


async def _claims(idp, token: str) -> dict:
    keys = KeySet.import_key_set(await (await idp.http.get("/api/v1/oidc/jwks")).json())
    return dict(jwt.decode(token, keys, algorithms=["RS256"]).claims)


def _basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


async def _service_client(idp, **extra):
    metadata = validate_metadata({"client_name": "Backend", "redirect_uris": ["https://b.example/cb"], "grant_types": ["client_credentials"], **extra})
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, metadata, workspace_id=idp.workspace["workspace_id"])
    return issued.row.client_id, issued.client_secret


def _later(monkeypatch, seconds: float) -> None:
    """The client cache's clock ``seconds`` ahead: its entries are as old as that."""
    now = time.monotonic()
    monkeypatch.setattr(shared_reads, "time", types.SimpleNamespace(monotonic=lambda: now + seconds))


# -- the verified secret ----------------------------------------------------------------------


async def test_a_secret_that_checked_out_is_not_digested_again(idp, monkeypatch):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    box = idp.app[SERVICES].secrets
    digested = []
    monkeypatch.setattr(box, "digests", lambda value, digests=box.digests: digested.append(value) or digests(value))
    for _ in range(3):
        response = await idp.token(client, grant_type="client_credentials")
        assert response.status == 200, await response.text()
    assert digested.count(client["client_secret"]) == 1
    response = await idp.token({**client, "client_secret": "wrong"}, grant_type="client_credentials")
    assert response.status == 401  # a wrong secret is still digested and refused
    assert (await idp.token(client, grant_type="client_credentials")).status == 200


async def test_a_rotated_secret_is_refused_once_the_client_is_read_again(idp, monkeypatch):
    client_id, secret = await _service_client(idp)
    assert (await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))).status == 200
    box = idp.app[SERVICES].secrets
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(update(OidcClient).where(OidcClient.client_id == client_id).values(secret_digest=box.digest("the new secret")))
    _later(monkeypatch, 11)
    old = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))
    assert old.status == 401 and (await old.json())["error"] == "invalid_client"
    new = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, "the new secret"))
    assert new.status == 200, await new.text()


async def test_a_deleted_client_is_refused_once_the_client_is_read_again(idp, monkeypatch):
    client_id, secret = await _service_client(idp)
    assert (await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))).status == 200
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(delete(OidcClient).where(OidcClient.client_id == client_id))
    idp.app[SERVICES].identity.clients.forget(client_id)
    response = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))
    assert response.status == 401 and (await response.json())["error"] == "invalid_client"


def test_the_verified_secret_belongs_to_one_client_object(idp):
    box = idp.app[SERVICES].secrets
    row = OidcClient(
        client_id="c1",
        secret_digest=box.digest("s3cret"),
        client_name="x",
        redirect_uris=[],
        grant_types=["client_credentials"],
        token_endpoint_auth_method="client_secret_basic",
        scope="openid",
        require_pkce=False,
        refresh_token_rotation=False,
        access_token_ttl=60,
        refresh_token_ttl=60,
    )
    first = Client.from_row(row, box)
    assert first.check_client_secret("s3cret") and not first.check_client_secret("s3cret ") and not first.check_client_secret("")
    row.secret_digest = box.digest("other")
    second = Client.from_row(row, box)
    assert not second.check_client_secret("s3cret") and second.check_client_secret("other")
    assert "verified" not in repr(first)


def _counted_sessions(app, reads: list[str], reading: asyncio.Event, hold: asyncio.Event):
    """The app's session factory, counting the reads of a client row (``reading`` set at the first)
    and holding each until ``hold``."""

    @contextlib.asynccontextmanager
    async def session_factory():
        async with app[SERVICES].db.session() as session:
            reads.append("read")
            reading.set()
            await asyncio.wait_for(hold.wait(), 20)
            yield session

    return session_factory


async def test_requests_that_find_a_client_gone_from_the_cache_at_once_share_one_read(idp, monkeypatch):
    client_id, secret = await _service_client(idp)
    cache, reads, reading, hold = idp.app[SERVICES].identity.clients, [], asyncio.Event(), asyncio.Event()
    cache.forget(client_id)
    factory = _counted_sessions(idp.app, reads, reading, hold)
    waiting = [asyncio.create_task(cache.get(factory, client_id)) for _ in range(20)]
    await asyncio.wait_for(reading.wait(), 20)
    waiting[0].cancel()  # one caller gone does not cancel the read the others wait for
    hold.set()
    found = await asyncio.wait_for(asyncio.gather(*waiting[1:]), 20)
    assert reads == ["read"] and {client.client_id for client in found} == {client_id} and len({id(client) for client in found}) == 1
    assert await cache.get(factory, client_id) is found[0]  # remembered
    _later(monkeypatch, 11)
    assert (await cache.get(factory, client_id)).client_id == client_id and reads == ["read", "read"]


async def test_a_client_forgotten_while_it_is_read_is_not_remembered_from_that_read(idp):
    client_id, secret = await _service_client(idp)
    cache, reads, reading, hold = idp.app[SERVICES].identity.clients, [], asyncio.Event(), asyncio.Event()
    cache.forget(client_id)
    factory = _counted_sessions(idp.app, reads, reading, hold)
    first = asyncio.create_task(cache.get(factory, client_id))
    await asyncio.wait_for(reading.wait(), 20)
    cache.forget(client_id)  # the row changed meanwhile (a rotated secret): the read may be stale
    hold.set()
    await asyncio.wait_for(first, 20)
    await cache.get(factory, client_id)
    assert reads == ["read", "read"]  # read again, not served from the read that ran across the change


# -- the fixed claims of a service token ------------------------------------------------------


async def test_service_token_claims_are_those_of_access_token_claims(idp):
    client_id, secret = await _service_client(idp, scope="openid")
    tokens = []
    for _ in range(2):
        response = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))
        assert response.status == 200, await response.text()
        tokens.append(await _claims(idp, (await response.json())["access_token"]))
    client = await idp.app[SERVICES].identity.clients.get(idp.app[SERVICES].db.session, client_id)
    ctx = Context(issuer=tokens[0]["iss"], keys=None, box=idp.app[SERVICES].secrets)
    expected = access_token_claims(ctx, client, None, "openid")
    for claims in tokens:
        assert set(claims) == set(expected)
        assert {k: v for k, v in claims.items() if k not in ("iat", "exp", "jti")} == {k: v for k, v in expected.items() if k not in ("iat", "exp", "jti")}
        assert claims["exp"] == claims["iat"] + client.access_token_ttl and abs(claims["iat"] - time.time()) < 60
    assert tokens[0]["jti"] != tokens[1]["jti"]


async def test_service_token_claims_follow_a_changed_client(idp, monkeypatch):
    client_id, secret = await _service_client(idp, scope="openid")
    first = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))
    claims = await _claims(idp, (await first.json())["access_token"])
    assert "actions.view" in claims["permissions"] and len(claims["permissions"]) > 1
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(update(OidcClient).where(OidcClient.client_id == client_id).values(permissions=["actions.view"], access_token_ttl=120))
    _later(monkeypatch, 11)
    second = await idp.http.post(TOKEN, data={"grant_type": "client_credentials"}, headers=_basic(client_id, secret))
    claims = await _claims(idp, (await second.json())["access_token"])
    assert claims["permissions"] == ["actions.view"] and claims["exp"] - claims["iat"] == 120


def test_service_claims_are_json_of_the_same_claims(idp):
    box = idp.app[SERVICES].secrets
    row = OidcClient(
        client_id="c\u00e9",
        secret_digest=None,
        client_name="x",
        redirect_uris=[],
        grant_types=["client_credentials"],
        token_endpoint_auth_method="client_secret_basic",
        scope="openid",
        require_pkce=False,
        refresh_token_rotation=False,
        access_token_ttl=60,
        refresh_token_ttl=60,
        workspace_id='ws"1',
    )
    client = Client.from_row(row, box)
    service_claims = ServiceClaims()
    ctx = Context(issuer="https://issuer.example/\u00fc", keys=None, box=box, service_claims=service_claims)
    payload = json.loads(service_claims(ctx, client, "openid"))
    expected = access_token_claims(ctx, client, None, "openid")
    assert set(payload) == set(expected)
    assert {k: v for k, v in payload.items() if k not in ("iat", "exp", "jti")} == {k: v for k, v in expected.items() if k not in ("iat", "exp", "jti")}
    other = json.loads(service_claims(Context(issuer="https://other.example", keys=None, box=box), client, "openid"))
    assert other["iss"] == "https://other.example"


def test_each_identity_runtime_keeps_its_own_service_claims(idp, make_app):
    """The encoded client_credentials claims live on the services, not in a module: two apps in one
    process (two deployments, or tests) do not share them."""
    from patchbay.core.identity.service import new_context

    mine = new_context(idp.app[SERVICES])
    theirs = new_context(make_app()[SERVICES])
    assert mine.service_claims is idp.app[SERVICES].identity.service_claims is new_context(idp.app[SERVICES]).service_claims
    assert theirs.service_claims is not mine.service_claims


# -- the request object and the answer ----------------------------------------------------------


def test_the_request_object_has_what_authlib_gives_one():
    ours = AioOAuth2Request("POST", "https://issuer.example/token", CIMultiDict(), MultiDict(grant_type="client_credentials"))
    theirs = OAuth2Request("POST", "https://issuer.example/token", None, {})
    assert set(vars(ours)) == set(vars(theirs))
    assert {k: v for k, v in vars(ours).items() if k not in ("payload", "headers")} == {
        k: v for k, v in vars(theirs).items() if k not in ("payload", "headers")
    }
    assert ours.payload.grant_type == "client_credentials"
    for uri in ("http://issuer.example/token", "ftp://issuer.example/token"):
        with pytest.raises(InsecureTransportError):
            AioOAuth2Request("POST", uri, CIMultiDict(), MultiDict())


def _answer(response) -> tuple[int, dict[str, str], bytes]:
    return response.status, dict(response.headers), response.body


def test_a_token_answer_is_what_the_general_path_makes():
    body = {"access_token": "a.b.c", "token_type": "Bearer", "expires_in": 3600, "scope": "openid \u00e9"}
    for extra in (None, {}, {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9"}):
        fast = to_response(OAuthResult(200, dict(body), list(default_json_headers)), extra_headers=extra)
        general = to_response(OAuthResult(200, dict(body), list(reversed(default_json_headers))), extra_headers=extra)
        assert _answer(fast) == _answer(general)
        assert fast.headers["Content-Type"] == "application/json; charset=utf-8"
        assert fast.headers["Cache-Control"] == "no-store" and fast.headers["Pragma"] == "no-cache"
    error = to_response(OAuthResult(200, {"error": "invalid_client"}, list(default_json_headers)))
    assert error.status == 401 and json.loads(error.body)["error_description"]


async def test_the_token_answer_carries_no_store_and_cors(idp):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    response = await idp.token(client, grant_type="client_credentials")
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-store" and response.headers["Pragma"] == "no-cache"
    assert response.headers["Access-Control-Allow-Origin"] == "*"


# -- the form ---------------------------------------------------------------------------------------


async def test_duplicate_parameters_are_refused_by_name(idp):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    body = f"grant_type=client_credentials&client_id={client['client_id']}&client_secret={client['client_secret']}&scope=openid&scope=openid&grant_type=x"
    response = await idp.http.post(TOKEN, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status == 400
    assert await response.json() == {"error": "invalid_request", "error_description": "parameter(s) sent more than once: grant_type, scope"}
    assert response.headers["Cache-Control"] == "no-store"


async def test_a_malformed_form_is_a_400_in_the_oauth_shape(idp):
    for content_type in ("multipart/form-data", "application/x-www-form-urlencoded; charset=no-such-charset"):
        response = await idp.http.post(TOKEN, data=b"grant_type=client_credentials", headers={"Content-Type": content_type})
        assert response.status == 400, content_type
        body = await response.json()
        assert body["error"] == "invalid_request" and "Malformed form body" in body["error_description"]


# -- the signing threads' inbox -----------------------------------------------------------------


def test_a_signature_is_answered_on_the_loop_that_asked_for_it():
    key = RSAKey.generate_key(2048)
    unsigned = UnsignedJWT(b"e30.e30", key.get_op_key("sign"))

    threads = SigningThreads(1)

    async def ask() -> str:
        return await asyncio.wait_for(threads.sign(unsigned), timeout=10)

    try:
        first, second = asyncio.run(ask()), asyncio.run(ask())  # a second loop after the first closed
    finally:
        threads.close()
    assert first == second and first.startswith("e30.e30.")
