"""Required connection parameters follow the effective definition, after ``[providers.<name>]``
overrides: a parameter only a replaced template used is no longer asked for."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key

PROVIDER = "twenty-crm-self-hosted"  # api_base_url = "https://{domain}/rest"


async def _connect(api, app, body):
    ws = await create_workspace_with_key(app)
    return await api.post(f"/connect/v1/providers/{PROVIDER}/connect", json=body, headers=ws["headers"])


def test_overriding_the_templated_url_drops_the_parameter_it_used(make_app):
    before = make_app()[SERVICES].registry.provider(PROVIDER)
    assert before.connection_params == ("domain",)
    after = make_app(providers={PROVIDER: {"api_base_url": "https://crm.internal.example/rest"}})[SERVICES].registry.provider(PROVIDER)
    assert after.connection_params == ()


def test_an_explicit_connection_params_override_is_kept(make_app):
    overrides = {PROVIDER: {"api_base_url": "https://crm.internal.example/rest", "connection_params": ["domain"]}}
    assert make_app(providers=overrides)[SERVICES].registry.provider(PROVIDER).connection_params == ("domain",)


async def test_connect_no_longer_asks_for_domain(make_app, aiohttp_client, aiohttp_server):
    crm = web.Application()
    crm.router.add_route("*", "/{tail:.*}", lambda request: web.json_response({"data": []}))
    server = await aiohttp_server(crm)
    plain = make_app()
    refused = await _connect(await aiohttp_client(plain), plain, {"credentials": {"apiKey": "k"}})
    assert refused.status == 400 and "domain" in (await refused.json())["message"]

    app = make_app(providers={PROVIDER: {"api_base_url": str(server.make_url("/rest"))}})
    stored = await _connect(await aiohttp_client(app), app, {"credentials": {"apiKey": "k"}})
    assert stored.status in (200, 201), await stored.text()
