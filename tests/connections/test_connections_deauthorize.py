"""Deauthorization (4.2) by the workspace and by the provider's signed callback, and the approval
gate in front of connecting (202 pending_approval)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.service import update_policy
from patchbay.core.integrations.service import save
from patchbay.core.security.auth import Principal
from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


def signed_request(payload: dict, secret: str) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    sig = base64.urlsafe_b64encode(hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return f"{sig}.{body}"


async def _import(api, ws, fake, user_id: str) -> str:
    tokens = fake._issue()
    response = await api.post(
        "/api/connections/import",
        json={
            "providerType": "fakeoauth",
            "credentials": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"]},
            "metadata": {"user_id": user_id},
        },
        headers=ws["headers"],
    )
    return (await response.json())["connectionId"]


async def test_deauthorize_by_provider_callback(api, ws, fake):
    mine = await _import(api, ws, fake, "u-1")
    other = await _import(api, ws, fake, "u-2")
    info = await (await api.get("/auth/fakeoauth/deauthorize")).json()
    assert info["deauthorizeUrl"].endswith("/auth/fakeoauth/deauthorize")

    forged = await api.post("/auth/fakeoauth/deauthorize", data={"signed_request": signed_request({"user_id": "u-1"}, "wrong")})
    assert forged.status == 401
    done = await api.post(
        "/auth/fakeoauth/deauthorize", data={"signed_request": signed_request({"user_id": "u-1", "algorithm": "HMAC-SHA256"}, fake.CLIENT_SECRET)}
    )
    assert done.status == 200 and (await done.json())["disconnected"] == 1
    statuses = {c["id"]: c["status"] for c in (await (await api.get("/connect/v1/connections", headers=ws["headers"])).json())["data"]}
    assert statuses == {mine: "disconnected", other: "connected"}


async def test_the_callback_verifies_with_the_client_secret_set_at_run_time(api, ws, fake):
    mine = await _import(api, ws, fake, "u-1")
    services = api.server.app[SERVICES]
    await save(services, workspace_id=None, provider_name="fakeoauth", body={"clientId": "runtime-app", "clientSecret": "runtime-secret"})
    with_file_secret = await api.post(
        "/auth/fakeoauth/deauthorize", data={"signed_request": signed_request({"user_id": "u-1", "algorithm": "HMAC-SHA256"}, fake.CLIENT_SECRET)}
    )
    assert with_file_secret.status == 401, "the stored app replaced the file's"
    done = await api.post(
        "/auth/fakeoauth/deauthorize", data={"signed_request": signed_request({"user_id": "u-1", "algorithm": "HMAC-SHA256"}, "runtime-secret")}
    )
    assert done.status == 200 and (await done.json())["disconnected"] == 1
    statuses = {c["id"]: c["status"] for c in (await (await api.get("/connect/v1/connections", headers=ws["headers"])).json())["data"]}
    assert statuses[mine] == "disconnected"


async def test_a_provider_whose_pack_reads_no_callback_accepts_only_the_workspace(aiohttp_client, fake_app, fake):
    """The callback's format belongs to the provider's pack (``register_deauthorization_callbacks``;
    the fake pack registers fakeoauth's): a provider with an OAuth app but no registered callback
    refuses a signed request that another provider's pack would accept."""
    api = await aiohttp_client(fake_app(providers={"fakecc": {"client_id": "cc", "client_secret": fake.CLIENT_SECRET}}))
    refused = await api.post(
        "/auth/fakecc/deauthorize", data={"signed_request": signed_request({"user_id": "u-1", "algorithm": "HMAC-SHA256"}, fake.CLIENT_SECRET)}
    )
    assert refused.status == 401


async def test_deauthorize_by_workspace_revokes(api, ws, fake):
    await _import(api, ws, fake, "u-1")
    response = await api.post("/auth/fakeoauth/deauthorize", headers=ws["headers"])
    assert response.status == 201 and (await response.json())["disconnected"] == 1
    assert fake.revoked, "the refresh token was revoked at the provider"
    status = await (await api.get("/connect/v1/providers/fakeoauth/status", headers=ws["headers"])).json()
    assert status["status"] == "disconnected"


async def test_connect_waits_for_approval(api, fake):
    app = api.server.app
    ws = await create_workspace_with_key(app, plan="enterprise", permissions=["connections.write", "connections.view"])
    async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
        await update_policy(
            session,
            ws["workspace_id"],
            {"enabled": True, "providers": ["fakekey", "fakeoauth"]},
            principal=Principal("api_key", ws["workspace_id"], frozenset(PERMISSIONS)),
        )
    held = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    assert held.status == 202
    body = await held.json()
    assert body["status"] == "pending_approval" and body["approvalId"]
    assert not fake.api_calls, "nothing reached the provider"
    login = await api.get("/auth/fakeoauth/login", headers=ws["headers"], allow_redirects=False)
    assert login.status == 202 and (await login.json())["status"] == "pending_approval"
    listed = await (await api.get("/connect/v1/connections", headers=ws["headers"])).json()
    assert listed["total"] == 0
