"""What the connect form asks of an end user reads right and agrees with the API: one place (the
provider's connect facts) decides each field's required-ness, so the Connect UI form, the provider
detail and the connect route cannot disagree, for every provider; Stripe's secret key connects on
its own (its Connect ``context`` is used only when given), Anthropic's API version is the
definition's, not a question to the end user, and Twilio's fields carry Twilio's words."""

from __future__ import annotations

import base64
from typing import Any

import attrs
import pytest
from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.fields import form_fields
from patchbay.core.connections.facts import connect_facts
from patchbay.core.connections.service import _api_key_credentials, split_params
from patchbay.core.errors import Invalid
from patchbay.core.plugins.provider import template_fields
from patchbay.core.testing import create_workspace_with_key


class FakeApi:
    """A local server standing in for a provider's API: answers ``{}`` and records each request's
    path and headers."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    def app(self) -> web.Application:
        async def answer(request: web.Request) -> web.Response:
            self.calls.append((request.path, {key.lower(): value for key, value in request.headers.items()}))
            return web.json_response({"object": "list", "data": []})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        return app


@attrs.frozen
class FakedProvider:
    """An app whose provider ``name`` calls ``upstream`` (a :class:`FakeApi` on a real port), its
    test client and an enterprise workspace of it."""

    upstream: FakeApi
    app: web.Application
    api: Any
    ws: dict[str, Any]


@pytest.fixture
def faked_provider(make_app, aiohttp_client, aiohttp_server):
    """``await faked_provider(name)`` -> :class:`FakedProvider`."""

    async def make(name: str) -> FakedProvider:
        upstream = FakeApi()
        server = await aiohttp_server(upstream.app())
        app = make_app(providers={name: {"api_base_url": str(server.make_url(""))}})
        return FakedProvider(upstream, app, await aiohttp_client(app), await create_workspace_with_key(app, plan="enterprise"))

    return make


async def _session(api, ws, provider: str) -> str:
    body = {"endUser": {"id": "user-7", "email": "ada@example.com"}, "allowedProviders": [provider]}
    response = await api.post("/connect/v1/connect-sessions", json=body, headers=ws["headers"])
    assert response.status == 201, await response.text()
    return (await response.json())["token"]


async def _page(api, token: str, provider: str) -> str:
    await api.get(f"/connect/ui?session={token}")
    response = await api.get(f"/connect/ui/providers/{provider}")
    assert response.status == 200, await response.text()
    return await response.text()


async def _submit(api, page: str, provider: str, form: dict[str, str]):
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return await api.post(f"/connect/ui/providers/{provider}", data={"csrf": csrf, **form}, allow_redirects=False)


async def _connection_id(api, ws) -> str:
    listed = await (await api.get("/connect/v1/connections?endUserId=user-7", headers=ws["headers"])).json()
    assert listed["total"] == 1
    return listed["data"][0]["connectionId"]


async def test_stripe_connects_with_a_secret_key_alone_through_the_connect_ui(faked_provider):
    faked = await faked_provider("stripe-api-key")
    stripe, api, ws = faked.upstream, faked.api, faked.ws

    page = await _page(api, await _session(api, ws, "stripe-api-key"), "stripe-api-key")
    assert 'name="apiKey"' in page and "Secret key" in page and "sk_test_" in page  # the label and help from Stripe's docs
    assert 'name="apiSecret"' not in page and "param:context" not in page, "no password, no Connect account asked"
    assert 'href="https://docs.stripe.com/api/authentication"' in page
    done = await _submit(api, page, "stripe-api-key", {"apiKey": "sk_test_4eC39HqLyjWDarjtT1zdp7dc"})
    assert done.status == 303, await done.text()

    connection = await _connection_id(api, ws)
    proxied = await api.get("/connect/v1/proxy/stripe-api-key/v1/customers", headers={**ws["headers"], "x-connection-id": connection})
    assert proxied.status == 200, await proxied.text()
    path, headers = stripe.calls[-1]
    assert path == "/v1/customers"
    assert headers["authorization"] == "Basic " + base64.b64encode(b"sk_test_4eC39HqLyjWDarjtT1zdp7dc:").decode()
    assert "stripe-context" not in headers, "the Connect context is sent only when the connection has one"

    # a Connect platform names the account: then the header goes with every call
    made = await api.post(
        "/connect/v1/providers/stripe-api-key/connect",
        json={"credentials": {"apiKey": "sk_test_platform"}, "params": {"context": "acct_1Nv0FGQ9RKHgCVdK"}},
        headers=ws["headers"],
    )
    assert made.status in (200, 201), await made.text()
    platform = (await made.json())["connectionId"]
    await api.get("/connect/v1/proxy/stripe-api-key/v1/customers", headers={**ws["headers"], "x-connection-id": platform})
    assert stripe.calls[-1][1]["stripe-context"] == "acct_1Nv0FGQ9RKHgCVdK"


def _filled(provider) -> tuple[dict, dict]:
    credentials = {field["name"]: "value" for field in connect_facts(provider)["credentials"]}
    params = {param["name"]: "value" for param in connect_facts(provider)["connectionParams"]}
    return credentials, params


def _refused(provider, credentials: dict, params: dict) -> bool:
    try:
        _api_key_credentials(provider, credentials)
        split_params(provider, params, None)
    except Invalid:
        return True
    return False


def test_the_form_and_the_api_agree_on_what_is_required_for_every_provider(make_app):
    """For each provider that connects with credentials: a field the form marks required is one
    the connect route refuses a body without, and the detail says required; a field the form
    leaves optional, or does not ask, the route accepts a body without."""
    registry = make_app()[SERVICES].registry
    checked = 0
    for provider in registry.providers.values():
        if provider.auth_mode == "oauth2":
            continue
        facts = connect_facts(provider)
        published = {f["name"]: f["required"] for f in facts["credentials"]} | {f"param:{p['name']}": p["required"] for p in facts["connectionParams"]}
        credentials, params = _filled(provider)
        assert not _refused(provider, credentials, params), provider.name
        asked = {field.name: field for field in form_fields(provider)}
        for name, required in published.items():
            field = asked.get(name)
            left_out = dict(credentials), dict(params)
            key = name.removeprefix("param:")
            (left_out[1] if name.startswith("param:") else left_out[0]).pop(key)
            if field is not None:
                assert field.required == required, f"{provider.name}: the form and the detail disagree on {name}"
            else:
                assert not required, f"{provider.name}: {name} is required but the form does not ask it"
            assert _refused(provider, *left_out) == required, f"{provider.name}: the connect route and the form disagree on {name}"
            checked += 1
    assert checked > 500


async def test_the_connect_route_refuses_what_the_form_marks_required(client, workspace):
    twilio = await client.post("/connect/v1/providers/twilio/connect", json={"credentials": {"apiKey": "AC0123"}}, headers=workspace["headers"])
    assert twilio.status == 400 and "apiSecret is required" in (await twilio.json())["message"]
    detail = await (await client.get("/connect/v1/providers/twilio", headers=workspace["headers"])).json()
    assert [(f["name"], f["required"], f["asked"]) for f in detail["connect"]["credentials"]] == [("apiKey", True, True), ("apiSecret", True, True)]
    stripe = await (await client.get("/connect/v1/providers/stripe-api-key", headers=workspace["headers"])).json()
    assert [f["name"] for f in stripe["connect"]["credentials"]] == ["apiKey"]
    assert stripe["connect"]["connectionParams"] == [
        {"name": "context", "label": "Stripe context", "required": False, "default": None, "help": stripe["connect"]["connectionParams"][0]["help"]}
    ]


async def test_anthropic_asks_for_the_api_key_only_and_sends_its_version(faked_provider):
    faked = await faked_provider("anthropic")
    anthropic, app, api, ws = faked.upstream, faked.app, faked.api, faked.ws
    page = await _page(api, await _session(api, ws, "anthropic"), "anthropic")
    assert "Version" not in page and "param:version" not in page
    assert [field.name for field in form_fields(app[SERVICES].registry.provider("anthropic"))] == ["apiKey"]
    done = await _submit(api, page, "anthropic", {"apiKey": "sk-ant-api03-example"})
    assert done.status == 303, await done.text()
    assert anthropic.calls[-1][0] == "/v1/models", "the key was proved by listing models"
    assert anthropic.calls[-1][1]["anthropic-version"] == "2023-06-01" and anthropic.calls[-1][1]["x-api-key"] == "sk-ant-api03-example"


async def test_twilio_asks_for_account_sid_and_auth_token(make_app, aiohttp_client):
    app = make_app()
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")
    page = await _page(api, await _session(api, ws, "twilio"), "twilio")
    assert ">Account SID<" in page and ">Auth Token<" in page
    assert "Username" not in page and "Password" not in page
    fields = form_fields(app[SERVICES].registry.provider("twilio"))
    assert [(f.label, f.required, f.kind) for f in fields] == [("Account SID", True, "text"), ("Auth Token", True, "password")]


@pytest.mark.parametrize("name", ["stripe-api-key", "twilio", "anthropic"])
def test_the_fixed_providers_link_their_docs(make_app, name):
    provider = make_app()[SERVICES].registry.provider(name)
    assert provider.docs_url and provider.docs_url.startswith("https://")


def test_an_oauth_step_asks_what_the_login_needs_and_not_what_the_provider_hands_out(make_app):
    registry = make_app()[SERVICES].registry
    for provider in registry.providers.values():
        if provider.auth_mode != "oauth2":
            continue
        asked = {field.name.removeprefix("param:"): field.required for field in form_fields(provider) if field.group == "params"}
        urls = template_fields(provider.authorization_url or "") | template_fields(provider.token_url or "")
        for name in urls - set(provider.connection_param_defaults):
            assert asked.get(name) is True, f"{provider.name}: the login needs {name}, the form does not ask it"
    fields = {name: [f.label for f in form_fields(registry.provider(name))] for name in ("salesforce", "pipedrive", "mailchimp", "zendesk")}
    assert fields == {"salesforce": [], "pipedrive": [], "mailchimp": ["Data center"], "zendesk": ["Zendesk subdomain"]}


def test_a_parameter_that_is_a_secret_is_typed_like_a_password(make_app):
    registry = make_app()[SERVICES].registry
    datadog = {field.name: field.kind for field in form_fields(registry.provider("datadog"))}
    assert datadog == {"apiKey": "password", "param:applicationKey": "password"}, "the Datadog site has a default: not asked"
    assert {field.name: field.kind for field in form_fields(registry.provider("algolia"))} == {"apiKey": "password", "param:APP_ID": "text"}
