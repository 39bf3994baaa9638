"""Secrets at rest, API keys, signing keys and the connect API's credentials."""

import time

import pytest
from sqlalchemy import text

from patchbay.core.appkeys import SERVICES
from patchbay.core.security.secrets import DecryptionError, SecretBox
from patchbay.core.security.signing_keys import InvalidToken, SigningKeys
from patchbay.core.storage.db import Database
from patchbay.core.testing import create_workspace_with_key, sign_access_token


def test_secret_box_round_trip_and_rotation():
    old = SecretBox(["old-secret"])
    token = old.encrypt("hunter2")
    assert "hunter2" not in token
    rotated = SecretBox(["new-secret", "old-secret"])
    assert rotated.decrypt(token) == "hunter2"
    assert SecretBox(["new-secret"]).decrypt(rotated.rotate(token)) == "hunter2"
    with pytest.raises(DecryptionError):
        SecretBox(["new-secret"]).decrypt(token)
    assert old.digest("value") in rotated.digests("value")


async def test_api_key_is_stored_only_as_digest(client):
    app = client.server.app
    created = await create_workspace_with_key(app)
    async with app[SERVICES].db.engine.connect() as connection:
        rows = (await connection.execute(text("SELECT prefix, key_digest FROM api_keys"))).all()
    assert len(rows) == 1
    prefix, digest = rows[0]
    assert created["api_key"] not in (prefix, digest) and created["api_key"].startswith(prefix)
    assert digest == app[SERVICES].secrets.digest(created["api_key"])


async def test_private_signing_key_is_encrypted_at_rest(client):
    app = client.server.app
    async with app[SERVICES].db.engine.connect() as connection:
        private = (await connection.execute(text("SELECT private_key FROM signing_keys WHERE status = 'current'"))).scalar_one()
    assert "PRIVATE KEY" not in private
    assert "PRIVATE KEY" in app[SERVICES].secrets.decrypt(private)


async def test_permissions_of_an_api_key_are_enforced(client):
    app = client.server.app
    limited = await create_workspace_with_key(app, permissions=["flows.view"])
    response = await client.get("/connect/v1/providers", headers=limited["headers"])
    assert response.status == 200  # listing providers needs only authentication
    from aiohttp.test_utils import make_mocked_request

    from patchbay.core.errors import Forbidden
    from patchbay.core.security.auth import require_principal

    request = make_mocked_request("GET", "/", headers=limited["headers"], app=app)
    assert (await require_principal(request, "flows.view")).workspace_id == limited["workspace_id"]
    with pytest.raises(Forbidden, match="Missing permission: flows.write"):
        await require_principal(request, "flows.write")


async def test_token_from_another_issuer_or_of_another_type_is_refused(client, workspace):
    app = client.server.app
    claims = {"sub": "u", "organization_id": workspace["workspace_id"]}
    for extra in ({"iss": "https://evil.example"}, {"token_type": "id_token"}):
        token = await sign_access_token(app, {**claims, **extra})
        assert (await client.get("/connect/v1/providers", headers={"Authorization": f"Bearer {token}"})).status == 401


async def test_rotation_keeps_previous_key_verifying(database_url):
    db = Database(database_url)
    try:
        keys = SigningKeys(db, SecretBox(["s"]))
        await keys.ensure()
        first_kid = keys.current_kid
        old_token = await keys.sign({"sub": "a"})
        await keys.rotate()
        assert keys.current_kid != first_kid
        assert {k["kid"] for k in (await keys.jwks())["keys"]} == {first_kid, keys.current_kid}
        assert (await keys.verify(old_token))["sub"] == "a"
        await keys.rotate()  # the first key retires: its tokens no longer verify
        assert first_kid not in {k["kid"] for k in (await keys.jwks())["keys"]}
        with pytest.raises(InvalidToken):
            await keys.verify(old_token)
    finally:
        await db.close()


async def test_a_verified_token_is_remembered_byte_for_byte_until_the_keys_reload(database_url, monkeypatch):
    db = Database(database_url)
    try:
        keys = SigningKeys(db, SecretBox(["s"]))
        await keys.ensure()
        token = await keys.sign({"sub": "a", "permissions": ["flows.view"]})
        decoded = []
        decode = keys._decode
        monkeypatch.setattr(keys, "_decode", lambda value: decoded.append(value) or decode(value))
        first = await keys.verify(token)
        first["sub"] = "changed by the caller"
        assert (await keys.verify(token))["sub"] == "a" and decoded == [token]  # remembered, and the caller's copy is its own
        header, claims, signature = token.split(".")
        for forged in (f"{header}.{claims}.{signature[:-2]}AA", f"{header}.{claims}.", f"{header}.{claims}.{signature}=", token + " "):
            with pytest.raises(InvalidToken):  # the same header and claims under another signature verify anew, and fail
                await keys.verify(forged)
        await keys.load()
        assert (await keys.verify(token))["sub"] == "a" and decoded.count(token) == 2  # a reload forgets what verified
    finally:
        await db.close()


async def test_a_remembered_token_past_its_expiry_is_refused(client, workspace, monkeypatch):
    from patchbay.core.security import service

    app = client.server.app
    token = await sign_access_token(app, {"sub": "u-expiring", "organization_id": workspace["workspace_id"]}, lifetime=60)
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/connect/v1/providers", headers=headers)).status == 200  # verified, and remembered
    later = time.time() + 61
    monkeypatch.setattr(service.time, "time", lambda: later)
    assert (await client.get("/connect/v1/providers", headers=headers)).status == 401


async def test_another_process_rotation_is_picked_up_on_unknown_kid(client):
    app = client.server.app
    other = SigningKeys(app[SERVICES].db, app[SERVICES].secrets)  # stands for `patchbay keys rotate` elsewhere
    await other.rotate()
    token = await other.sign({"sub": "x"})
    assert (await app[SERVICES].signing_keys.verify(token))["sub"] == "x"


@pytest.mark.both_databases
async def test_concurrent_first_starts_create_one_current_key(database_url):
    import asyncio

    from sqlalchemy import func, select

    from patchbay.core.security.models import SigningKey

    databases = [Database(database_url) for _ in range(4)]
    try:
        await asyncio.gather(*(SigningKeys(db, SecretBox(["s"])).ensure() for db in databases))
        async with databases[0].session() as session:
            assert await session.scalar(select(func.count()).select_from(SigningKey).where(SigningKey.status == "current")) == 1
    finally:
        for db in databases:
            await db.close()


async def test_concurrent_calls_with_one_token_share_one_trust_read(client, workspace):
    """A burst of calls with a token whose trust this process has not checked yet (or checked too
    long ago) makes one set of database reads, not one per call."""
    import asyncio

    from sqlalchemy import event

    services = client.server.app[SERVICES]
    token = await sign_access_token(client.server.app, {"sub": "u-burst", "organization_id": workspace["workspace_id"]})
    trust_reads = []

    def count(_connection, _cursor, statement, *_):
        if "oidc_clients.trust" in statement:
            trust_reads.append(statement)

    event.listen(services.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        responses = await asyncio.gather(*(client.get("/connect/v1/providers", headers={"Authorization": f"Bearer {token}"}) for _ in range(20)))
    finally:
        event.remove(services.db.engine.sync_engine, "before_cursor_execute", count)
    assert [response.status for response in responses] == [200] * 20
    assert len(trust_reads) == 1


async def test_a_tokens_principal_is_made_once_per_trust_answer(client, workspace):
    from patchbay.core.security.service import token_principal
    from patchbay.core.users.models import User
    from patchbay.core.workspaces.service import add_member, set_member_role

    services = client.server.app[SERVICES]
    claims = {"sub": "u-again", "organization_id": workspace["workspace_id"], "permissions": ["flows.view", "flows.write"]}
    token = await sign_access_token(client.server.app, claims)
    first = await token_principal(services, token)
    assert first is not None and first.permissions == frozenset({"flows.view", "flows.write"})
    assert await token_principal(services, token) is first
    services.credential_caches.token_trust.clear()  # read again, the same role: the same principal
    assert await token_principal(services, token) is first
    async with services.db.transaction() as session:
        session.add(User(id="u-admin", email="u-admin@testing.invalid"))
        await session.flush()
        await add_member(session, workspace_id=workspace["workspace_id"], user_id="u-admin", role="admin")  # the workspace keeps an admin
        await set_member_role(session, workspace_id=workspace["workspace_id"], user_id="u-again", role="viewer")
    services.credential_caches.token_trust.clear()  # read again, another role: a principal made for it
    assert (await token_principal(services, token)).permissions == frozenset({"flows.view"})
    assert await token_principal(services, token + "x") is None  # another text verifies anew, and fails
