"""Compliance: the privacy policy page, Meta's data deletion callback (read by the meta pack: its
signed_request verified with ``[meta] app_secret``, or the deprecated ``[compliance]
meta_app_secret``, answered with {url, confirmation_code}; refused naming the field when the pack is
disabled), the deletion done by the job and reported completed, and a signed-in user's own request."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.settings import ComplianceSettings
from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.core.users.models import User
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.models import Membership
from patchbay.core.workspaces.service import add_member

APP_SECRET = "meta-app-secret"
META_SECTION = {"meta": {"app_secret": APP_SECRET}}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_request(data: dict, secret: str = APP_SECRET) -> str:
    payload = _b64(json.dumps(data).encode())
    return _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest()) + "." + payload


async def _status(client, code, want="completed"):
    for _ in range(100):
        body = await (await client.get(f"/compliance/data-deletion/status?code={code}")).json()
        if body["status"] == want:
            return body
        await asyncio.sleep(0.05)
    return body


async def _meta_user(app, workspace_id, meta_id):
    from patchbay.core.identity.models import FederatedIdentity

    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email=f"{meta_id}@example.test", password=None)
        session.add(FederatedIdentity(provider="facebook", subject=meta_id, user_id=user.id))
        await add_member(session, workspace_id=workspace_id, user_id=user.id, role="viewer")
    return user.id


@pytest.mark.both_databases
async def test_meta_deletion_callback_removes_the_user(database_url, aiohttp_client, make_app):
    app = make_app(background=True, plugin_sections=META_SECTION, database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    doomed = await _meta_user(app, ws["workspace_id"], "10001")
    kept = await _meta_user(app, ws["workspace_id"], "10002")

    forged = await client.post("/compliance/data-deletion", data={"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": "10002"}, "wrong")})
    assert (forged.status, (await forged.json())["message"]) == (400, "Invalid signed_request signature")
    assert (await client.post("/compliance/data-deletion", data={"signed_request": "garbage"})).status == 400

    response = await client.post(
        "/compliance/data-deletion", data={"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": "10001", "issued_at": 1})}
    )
    assert response.status == 201, await response.text()
    body = await response.json()
    assert set(body) == {"url", "confirmation_code"}
    assert body["url"].endswith(f"/compliance/data-deletion/status?code={body['confirmation_code']}")

    status = await _status(client, body["confirmation_code"])
    assert status["status"] == "completed" and status["completedAt"]
    async with app[SERVICES].db.session() as session:
        assert await session.get(User, doomed) is None
        assert await session.scalar(select(Membership).where(Membership.user_id == doomed)) is None
        assert await session.get(User, kept) is not None
    page = await client.get(f"/compliance/data-deletion/status?code={body['confirmation_code']}", headers={"Accept": "text/html,*/*"})
    assert page.content_type == "text/html" and "has been completed" in await page.text()
    assert (await client.get("/compliance/data-deletion/status?code=unknown")).status == 404
    assert (await client.get("/compliance/data-deletion/status")).status == 400


async def test_user_requests_own_deletion_and_policy_page(aiohttp_client, make_app):
    app = make_app(background=True, compliance=ComplianceSettings(privacy_policy_text="We keep <little> data.\n\nAsk us."))
    client = await aiohttp_client(app)
    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email="self@example.test", password=None)
    token = await sign_access_token(app, {"sub": user.id, "client_id": "console", "permissions": []})
    response = await client.post("/compliance/data-deletion", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 201
    assert (await _status(client, (await response.json())["confirmation_code"]))["status"] == "completed"
    async with app[SERVICES].db.session() as session:
        assert await session.get(User, user.id) is None
    missing = await client.post("/compliance/data-deletion")
    assert (missing.status, await missing.json()) == (
        400,
        {"statusCode": 400, "message": "Validation failed: signed_request or a signed-in user's access token is required"},
    )
    unset = await client.post("/compliance/data-deletion", data={"signed_request": "a.b"})
    assert (unset.status, (await unset.json())["message"]) == (400, "Meta data deletion is not configured ([meta] app_secret)")

    page = await client.get("/compliance/privacy-policy")
    text = await page.text()
    assert page.content_type == "text/html" and "<p>We keep &lt;little&gt; data.</p><p>Ask us.</p>" in text
    info = await (await client.get("/compliance/data-deletion")).json()
    assert info["callbackUrl"].endswith("/compliance/data-deletion")
    assert info["callbacks"] == [{"source": "meta", "field": "signed_request"}]


async def test_privacy_policy_redirect(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(compliance=ComplianceSettings(privacy_policy_url="https://example.test/privacy")))
    response = await client.get("/compliance/privacy-policy", allow_redirects=False)
    assert (response.status, response.headers["Location"]) == (302, "https://example.test/privacy")


async def _delete_by_callback(client, meta_id: str) -> None:
    response = await client.post("/compliance/data-deletion", data={"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": meta_id})})
    assert response.status == 201, await response.text()
    assert (await _status(client, (await response.json())["confirmation_code"]))["status"] == "completed"


async def test_the_identities_a_callback_names_are_registered_by_a_pack(database_url, aiohttp_client, make_settings):
    """Meta's callback finds its user through the identity providers the ``meta`` pack registers;
    with that pack disabled, another plugin that reads the callback decides instead."""
    from patchbay import hookimpl
    from patchbay.core.app import create_app
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.identity.models import FederatedIdentity
    from patchbay.providers.meta.deletion import MetaDeletionCallback, MetaSettings

    class OwnMetaLogin:
        @hookimpl
        def register_deletion_identities(self, register):
            register("meta", ("meta-sso",))

        @hookimpl
        def register_deletion_callbacks(self, register):
            register("meta", MetaDeletionCallback())

        @hookimpl
        def register_settings(self, register):
            register("meta", MetaSettings)

    def app_with(plugins=(), disable=()):
        settings = make_settings(plugin_sections=META_SECTION, database_url=database_url)
        settings.plugins.disable = list(disable)
        return create_app(settings, plugins=plugins, migrate=False)

    assert app_with()[SERVICES].registry.get("deletion_identities", "meta") == ("facebook", "meta")
    app = app_with([OwnMetaLogin()], disable=["meta"])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    by_facebook = await _meta_user(app, ws["workspace_id"], "20001")
    async with app[SERVICES].db.transaction() as session:
        by_sso = await create_user(session, email="sso@example.test", password=None)
        session.add(FederatedIdentity(provider="meta-sso", subject="20002", user_id=by_sso.id))
    await _delete_by_callback(client, "20001")
    await _delete_by_callback(client, "20002")
    async with app[SERVICES].db.session() as session:
        assert await session.get(User, by_facebook) is not None  # facebook is no longer named by any plugin
        assert await session.get(User, by_sso.id) is None


async def test_the_deprecated_compliance_key_still_verifies_meta_callbacks(database_url, aiohttp_client, make_app, caplog):
    """``[compliance] meta_app_secret`` (documented before ``[meta] app_secret``) still works, with a
    deprecation warning; ``[meta] app_secret`` wins when both are set."""
    app = make_app(background=True, compliance=ComplianceSettings(meta_app_secret=APP_SECRET), database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    doomed = await _meta_user(app, ws["workspace_id"], "30001")
    with caplog.at_level("WARNING", logger="patchbay.providers.meta.deletion"):
        await _delete_by_callback(client, "30001")
    assert "[compliance] meta_app_secret is deprecated" in caplog.text
    async with app[SERVICES].db.session() as session:
        assert await session.get(User, doomed) is None

    both = make_app(compliance=ComplianceSettings(meta_app_secret="old"), plugin_sections={"meta": {"app_secret": "new"}})
    client = await aiohttp_client(both)
    refused = await client.post("/compliance/data-deletion", data={"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": "1"}, "old")})
    assert (refused.status, (await refused.json())["message"]) == (400, "Invalid signed_request signature")
    accepted = await client.post("/compliance/data-deletion", data={"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": "1"}, "new")})
    assert accepted.status == 201


async def test_meta_callback_with_the_meta_pack_disabled_is_refused_naming_the_field(database_url, aiohttp_client, make_settings):
    """With the meta pack disabled nothing reads signed_request: the callback answers 400 in the
    connect API's error shape, naming the field and why, records no request, and the information
    route lists no callback."""
    from patchbay.core.app import create_app

    settings = make_settings(compliance=ComplianceSettings(meta_app_secret=APP_SECRET), database_url=database_url)
    settings.plugins.disable = ["meta"]
    app = create_app(settings, migrate=False)
    client = await aiohttp_client(app)
    body = {"signed_request": signed_request({"algorithm": "HMAC-SHA256", "user_id": "40001"})}
    for response in (await client.post("/compliance/data-deletion", data=body), await client.post("/compliance/data-deletion", json=body)):
        assert (response.status, await response.json()) == (
            400,
            {
                "statusCode": 400,
                "message": "Validation failed: a signed-in user's access token is required; "
                "no installed provider pack reads signed_request (its pack is missing or disabled)",
            },
        )
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(DeletionRequest)) is None
    assert (await (await client.get("/compliance/data-deletion")).json())["callbacks"] == []
