"""The Salesforce auth hook (providers/salesforce/auth.py): the org's instance_url comes from the token
response, a login does not ask for it, and proxied calls go to it. The catalog's salesforce
definition is pointed at the fake provider with ``[providers.salesforce]`` overrides."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import aiohttp

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key


async def test_instance_url_learned_from_token_response(aiohttp_client, make_app, fake):
    overrides = {
        "salesforce": {
            "authorization_url": "{server}/authorize",
            "token_url": "{server}/token",
            "revocation_url": None,
            "connection_params": ["instance_url", "hostname", "server"],
            "connection_param_defaults": {"hostname": "login.salesforce.com", "server": fake.base},
            "client_id": fake.CLIENT_ID,
            "client_secret": fake.CLIENT_SECRET,
        }
    }
    app = make_app(providers=overrides)
    assert type(app[SERVICES].registry.get("auth", "salesforce")).__name__ == "SalesforceAuth"
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")
    fake.extra_token_fields = {"instance_url": f"{fake.base}/api/org1", "id": "https://login.salesforce.com/id/00Dxx/005yy"}

    login = await api.get("/auth/salesforce/login", params={"redirect_uri": "https://app.example.com/sf"}, headers=ws["headers"], allow_redirects=False)
    assert login.status == 302, await login.text()
    async with aiohttp.ClientSession() as browser, browser.get(login.headers["Location"], allow_redirects=False) as consent:
        callback = urlsplit(consent.headers["Location"])
    done = await api.get(callback.path + "?" + callback.query, allow_redirects=False)
    connection_id = parse_qs(urlsplit(done.headers["Location"]).query)["connectionId"][0]

    connection = await (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).json()
    assert connection["params"]["instance_url"] == f"{fake.base}/api/org1"
    assert connection["metadata"]["organization_id"] == "00Dxx" and connection["metadata"]["user_id"] == "005yy"
    proxied = await api.post(
        "/connect/v1/proxy/salesforce",
        json={"method": "GET", "path": "/services/data/v60.0/sobjects"},
        headers={**ws["headers"], "x-connection-id": connection_id},
    )
    assert proxied.status == 200, await proxied.text()
    assert fake.api_calls[-1]["path"] == "/org1/services/data/v60.0/sobjects"
