"""The identity provider and the credentials stand on the services, without a web application:
``build_services`` installs their runtime parts, a sign-in and the hourly purge work through the
services alone, the signing threads belong to the services' signing keys and stop with them."""

import asyncio
import threading

from joserfc import jwt
from joserfc.jwk import RSAKey

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity import service as identity
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.security import service as credentials
from patchbay.core.security.signing_keys import SigningThreads, UnsignedJWT
from patchbay.core.services import build_services
from patchbay.core.users.service import create_user


def _signing_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("patchbay-sign-")}


async def test_the_services_alone_sign_in_a_user_and_purge_the_session(make_settings):
    services = build_services(make_settings())
    assert services.identity is not None and services.credential_caches is not None
    assert "identity-sessions" in services.cron.jobs
    async with services.running():
        async with services.db.transaction() as session:
            user = await create_user(session, email="solo@example.com", password="a long password")
            issued = await create_client(session, services.secrets, validate_metadata({"client_name": "Solo", "redirect_uris": ["https://solo.example/cb"]}))
        assert await identity.check_password(services, "solo@example.com", "a long password") == user.id
        assert await identity.check_password(services, "solo@example.com", "not the password") is None
        assert (await identity.load_client(services, issued.row.client_id)).client_name == "Solo"
        token, live = await identity.sign_in(services, user.id, 3600, previous=None)
        assert await identity.session_of_token(services, token) == live
        await identity.sign_out(services, {live.id})
        assert await identity.session_of_token(services, token) is None
        assert await identity.purge_ended_sessions(services) == {"sessionsPurged": 1}


async def test_the_signing_threads_stop_with_the_services(make_settings):
    before = _signing_threads()
    services = build_services(make_settings())
    async with services.running():
        claims = await services.signing_keys.sign({"sub": "someone"})
        assert jwt.decode(claims, RSAKey.import_key((await services.signing_keys.jwks())["keys"][0])).claims == {"sub": "someone"}
        assert _signing_threads() - before  # started by the first signature
    assert not _signing_threads() - before  # stopped when the services stopped


async def test_signing_threads_closed_start_again_when_asked():
    key = RSAKey.generate_key(2048)
    threads = SigningThreads(2)
    first = await asyncio.wait_for(threads.sign(UnsignedJWT(b"e30.e30", key.get_op_key("sign"))), timeout=10)
    threads.close()
    assert not [thread for thread in threads._threads if thread.is_alive()]
    again = await asyncio.wait_for(threads.sign(UnsignedJWT(b"e30.e30", key.get_op_key("sign"))), timeout=10)
    threads.close()
    assert first == again  # RS256 (PKCS#1 v1.5) signs the same input the same way


async def test_each_app_has_its_own_credential_caches(make_app):
    first, second = make_app(), make_app()
    assert first[SERVICES].credential_caches is not second[SERVICES].credential_caches
    reads = []

    async def read():
        reads.append(1)
        return frozenset({"flows.view"}), 60

    key = ("client", None, None)
    assert await first[SERVICES].credential_caches.token_trust.get(key, read) == frozenset({"flows.view"})
    await first[SERVICES].credential_caches.token_trust.get(key, read)
    credentials.forget_cached_api_keys(first[SERVICES])
    await second[SERVICES].credential_caches.token_trust.get(key, read)
    assert len(reads) == 2  # once for the first app (remembered there), once for the second
