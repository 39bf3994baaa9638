"""The hooks a provider pack uses to change how its calls are made: ``register_auth`` (a
ProviderAuth subclass overriding ``inject``) and ``register_proxy`` (``prepare`` rewriting the
outgoing call, ``retry_after`` reading a rate-limit signal the definition cannot describe)."""

from __future__ import annotations

from patchbay import ProviderAuth, hookimpl
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


class SignedAuth(ProviderAuth):
    def inject(self, provider, credentials, params):
        headers, query = super().inject(provider, credentials, params)
        return {**headers, "X-Signed": "sig-" + credentials["api_key"][-3:]}, query


class Customizer:
    def __init__(self) -> None:
        self.waits: list[int] = []

    def prepare(self, call) -> None:
        call.headers["X-Tenant"] = call.connection_id
        if call.method == "PUT":
            call.body = "signed:" + call.body.decode()  # text: the pool sends it as UTF-8

    def retry_after(self, response):
        if response.status == 429:
            self.waits.append(response.status)
            return 0.05
        return None


class HookPack:
    def __init__(self) -> None:
        self.customizer = Customizer()

    @hookimpl
    def register_auth(self, register):
        register("fakekey", SignedAuth())

    @hookimpl
    def register_proxy(self, register):
        register("fakekey", self.customizer)


async def test_auth_and_proxy_hooks(aiohttp_client, fake_app, fake):
    pack = HookPack()
    app = fake_app(plugins=[pack])
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")
    created = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    connection_id = (await created.json())["connectionId"]
    response = await api.post(
        "/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/limited"}, headers={**ws["headers"], "x-connection-id": connection_id}
    )
    assert response.status == 200
    call = fake.api_calls[-1]
    assert call["headers"]["X-Signed"] == "sig-123" and call["headers"]["Authorization"] == f"Bearer {KEY}"
    assert call["headers"]["X-Tenant"] == connection_id
    assert pack.customizer.waits == [429], "the hook's retry_after decided the wait"


async def test_a_customizer_may_set_the_body_as_text(aiohttp_client, fake_app, fake):
    app = fake_app(plugins=[HookPack()])
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    created = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    headers = {**ws["headers"], "x-connection-id": (await created.json())["connectionId"]}
    response = await api.post("/connect/v1/proxy/fakekey", json={"method": "PUT", "path": "/notes", "body": "é"}, headers=headers)
    assert response.status < 500, await response.text()
    assert fake.api_calls[-1]["body"] == "signed:é".encode()
