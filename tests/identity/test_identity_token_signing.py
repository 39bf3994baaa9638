"""How the token endpoint signs: client_credentials runs on the event loop and only the RSA
signature goes to a signing thread; the hand-built JWS verifies with joserfc; a signing thread's
failure reaches the request that waits for it; the private key is parsed once per kid; jti values
come from one random read per batch."""

import asyncio
import threading

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from joserfc.util import json_b64encode

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity import server
from patchbay.core.security import signing_keys
from patchbay.core.security.signing_keys import SigningThreads, UnsignedJWT


async def test_client_credentials_runs_on_the_loop_and_only_the_signature_on_a_signing_thread(idp, monkeypatch):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    seen: dict[str, str] = {}
    server = idp.app[SERVICES].identity.server
    create = server.create_token_response

    def spy_create(request):
        seen["grant"] = threading.current_thread().name
        return create(request)

    sign = UnsignedJWT.sign

    def spy_sign(self):
        seen["signature"] = threading.current_thread().name
        return sign(self)

    monkeypatch.setattr(server, "create_token_response", spy_create)
    monkeypatch.setattr(UnsignedJWT, "sign", spy_sign)
    response = await idp.token(client, grant_type="client_credentials")
    assert response.status == 200, await response.text()
    assert seen["grant"] == threading.current_thread().name  # the test's loop thread
    assert seen["signature"].startswith("patchbay-sign-")
    keys = KeySet.import_key_set(await (await idp.http.get("/api/v1/oidc/jwks")).json())
    token = jwt.decode((await response.json())["access_token"], keys, algorithms=["RS256"])
    assert token.header == {"typ": "at+jwt", "alg": "RS256", "kid": idp.app[SERVICES].signing_keys.current_kid}
    assert token.claims["sub"] == client["client_id"] and token.claims["token_type"] == "access_token"


async def test_prepared_tokens_verify_and_keep_non_ascii_claims(idp):
    keys = idp.app[SERVICES].signing_keys
    token = await keys.sign({"name": "Zoë Ångström", "n": 1}, typ="JWT")
    assert await keys.verify(token) == {"name": "Zoë Ångström", "n": 1}
    assert keys.sign_blocking({"n": 2}).count(".") == 2
    assert await keys.verify(keys.sign_blocking({"n": 2})) == {"n": 2}


class _Broken:
    def sign(self, *args):
        raise ValueError("no signature today")


async def test_a_failed_signature_reaches_its_request_and_the_threads_keep_signing():
    key = RSAKey.generate_key(2048)
    signing_input = json_b64encode({"alg": "RS256"}) + b".e30"  # {} signed by RS256
    threads = SigningThreads(2)
    try:
        with pytest.raises(ValueError, match="no signature today"):
            await threads.sign(UnsignedJWT(b"e30.e30", _Broken()))
        abandoned = threads.sign(UnsignedJWT(signing_input, key.get_op_key("sign")))
        abandoned.cancel()  # the client went away: its signature is dropped, not an error
        good = await asyncio.wait_for(threads.sign(UnsignedJWT(signing_input, key.get_op_key("sign"))), timeout=10)
    finally:
        threads.close()
    assert jwt.decode(good, key).claims == {}


async def test_the_private_key_is_parsed_once_per_kid(idp, monkeypatch):
    keys = idp.app[SERVICES].signing_keys
    imports = []
    original = RSAKey.import_key

    def counting(*args, **kwargs):
        if "parameters" in kwargs:  # the private key (the JWKS imports the public ones too)
            imports.append(kwargs["parameters"]["kid"])
        return original(*args, **kwargs)

    monkeypatch.setattr(signing_keys.RSAKey, "import_key", counting)
    await keys.load()
    await keys.load()
    assert imports == []  # a reload of the same current key keeps the parsed one
    new_kid = await keys.rotate()
    assert imports == [new_kid]
    assert jwt.decode(await keys.sign({"n": 3}), keys._public).header["kid"] == new_kid


def test_jwt_ids_are_distinct_and_cost_one_random_read_per_batch(monkeypatch):
    reads = []
    urandom = server.os.urandom

    def counting(size):
        reads.append(size)
        return urandom(size)

    monkeypatch.setattr(server.os, "urandom", counting)
    ids = server.JwtIds()
    values = [ids() for _ in range(server.JwtIds.BATCH * 2)]
    assert len(set(values)) == len(values) and {len(value) for value in values} == {16}
    assert reads == [server.JwtIds.SIZE * server.JwtIds.BATCH] * 2  # not a system call per token
    ids._forget()  # what a forked child does first: it must not hand out the parent's next values
    assert ids() not in values and len(reads) == 3


async def test_client_credentials_tokens_carry_distinct_jti(idp):
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    keys = idp.app[SERVICES].signing_keys
    seen = set()
    for _ in range(3):
        body = await (await idp.token(client, grant_type="client_credentials")).json()
        seen.add((await keys.verify(body["access_token"]))["jti"])
    assert len(seen) == 3
