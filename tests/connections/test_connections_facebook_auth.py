"""The Meta auth hook (providers/meta/auth.py): the short-lived token of the code exchange is traded
for a long-lived one and the Meta user is recorded, so that Meta's deauthorization callback finds
the connection. The catalog's facebook definition is pointed at the fake provider."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from urllib.parse import urlsplit

import aiohttp

from patchbay.core.testing import create_workspace_with_key


async def test_long_lived_token_and_user_then_deauthorize(aiohttp_client, make_app, fake):
    overrides = {
        "facebook": {
            "authorization_url": "{server}/authorize",
            "token_url": "{server}/token",
            "api_base_url": "{server}/api",
            "connection_params": ["server"],
            "connection_param_defaults": {"server": fake.base},
            "client_id": fake.CLIENT_ID,
            "client_secret": fake.CLIENT_SECRET,
        }
    }
    app = make_app(providers=overrides)
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")
    login = await api.get("/auth/facebook/login", params={"metadata": '{"page_id": "page-9"}'}, headers=ws["headers"], allow_redirects=False)
    assert login.status == 302, await login.text()
    async with aiohttp.ClientSession() as browser, browser.get(login.headers["Location"], allow_redirects=False) as consent:
        callback = urlsplit(consent.headers["Location"])
    done = await api.get(callback.path + "?" + callback.query, allow_redirects=False)
    assert done.status == 200 and "connected" in await done.text()
    listed = await (await api.get("/connect/v1/connections?provider=facebook", headers=ws["headers"])).json()
    connection = listed["data"][0]
    assert connection["metadata"] == {"page_id": "page-9", "user_id": "user-1", "user_name": "Ada Lovelace"}
    assert len(fake.exchanged) == 1, "the short-lived token was exchanged"
    token = await (await api.get(f"/api/connections/{connection['id']}/token", headers=ws["headers"])).json()
    assert token["accessToken"] != fake.exchanged[0] and token["accessToken"] in fake.access_tokens

    payload = base64.urlsafe_b64encode(json.dumps({"user_id": "user-1", "algorithm": "HMAC-SHA256"}).encode()).rstrip(b"=").decode()
    signature = base64.urlsafe_b64encode(hmac.new(fake.CLIENT_SECRET.encode(), payload.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    gone = await api.post("/auth/facebook/deauthorize", data={"signed_request": f"{signature}.{payload}"})
    assert (await gone.json())["disconnected"] == 1
    status = await (await api.get("/connect/v1/providers/facebook/status", headers=ws["headers"])).json()
    assert status["status"] == "disconnected"
