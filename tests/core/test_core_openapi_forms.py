"""Form bodies and per-method query parameters in /openapi.json (issue 17): every route that reads an
``application/x-www-form-urlencoded`` body publishes its fields under that media type, and the
authorization, end-session and userinfo endpoints (one handler for GET and POST) document their
query on GET only and their form on POST only. Every form route, posted a form built from its
declared fields only, answers without a server error, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import openapi_spec_validator
import pytest

from patchbay.core.http.openapi import FORM, accepts, form_model

#: (method, path) -> (the form's required fields, its optional ones)
FORMS: dict[tuple[str, str], tuple[set[str], set[str]]] = {
    ("post", "/api/v1/oidc/token"): (
        {"grant_type"},
        {"code", "redirect_uri", "code_verifier", "refresh_token", "scope", "client_id", "client_secret", "resource"},
    ),
    ("post", "/api/v1/oidc/introspect"): ({"token"}, {"token_type_hint", "client_id", "client_secret"}),
    ("post", "/api/v1/oidc/revoke"): ({"token"}, {"token_type_hint", "client_id", "client_secret"}),
    ("post", "/api/v1/oidc/authorize"): (
        {"response_type", "client_id", "redirect_uri"},
        {
            "scope",
            "state",
            "nonce",
            "code_challenge",
            "code_challenge_method",
            "prompt",
            "max_age",
            "login_hint",
            "id_token_hint",
            "idp",
            "kc_idp_hint",
            "response_mode",
            "resource",
        },
    ),
    ("post", "/api/v1/oidc/end-session"): (set(), {"id_token_hint", "post_logout_redirect_uri", "state", "client_id"}),
    ("post", "/api/v1/oidc/userinfo"): (set(), {"access_token"}),
    ("post", "/api/v1/oidc/login"): ({"interaction", "csrf", "email", "password"}, set()),
    ("post", "/api/v1/oidc/consent"): ({"interaction", "csrf", "decision"}, {"workspace", "connection"}),
    ("post", "/api/v1/oidc/signout"): ({"t", "csrf"}, set()),
    ("post", "/api/v1/oidc/switch-account"): ({"interaction", "csrf"}, set()),
    ("post", "/auth/{providerType}/begin"): ({"state"}, set()),
    ("post", "/auth/{providerType}/deauthorize"): (set(), {"signed_request"}),
    ("post", "/connect/ui/providers/{name}"): ({"csrf"}, {"apiKey", "apiSecret"}),
    ("post", "/connect/ui/providers/{name}/oauth"): ({"csrf"}, set()),
    ("post", "/console/auth/logout"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/settings/keys"): ({"csrf", "name"}, {"access", "expiresInDays"}),
    ("post", "/console/w/{workspace_id}/settings/keys/{key_id}/revoke"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/settings/members/invite"): ({"csrf", "email"}, {"role"}),
    ("post", "/console/w/{workspace_id}/settings/members/{user_id}/role"): ({"csrf", "role"}, set()),
    ("post", "/console/w/{workspace_id}/settings/members/{user_id}/remove"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/settings/members/invites/{invite_id}/revoke"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/approvals/{approval_id}/approve"): ({"csrf"}, {"note", "back"}),
    ("post", "/console/w/{workspace_id}/flows/approvals/{approval_id}/deny"): ({"csrf"}, {"note", "back"}),
    ("post", "/console/w/{workspace_id}/settings/approvals/{request_id}/approve"): ({"csrf"}, {"note"}),
    ("post", "/console/w/{workspace_id}/settings/approvals/{request_id}/deny"): ({"csrf"}, {"note"}),
    ("post", "/console/w/{workspace_id}/settings/alerts"): ({"csrf", "channel", "target"}, {"event"}),
    ("post", "/console/w/{workspace_id}/settings/alerts/{alert_id}/delete"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/connections/link"): ({"csrf", "endUserId"}, {"email", "displayName", "provider"}),
    ("post", "/console/w/{workspace_id}/connections/{connection_id}/check-health"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/connections/{connection_id}/delete"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/connections/{connection_id}/reconnect"): ({"csrf"}, {"endUserId"}),
    ("post", "/console/w/{workspace_id}/logs/inbound/{entry_id}/replay"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/logs/delivery/{entry_id}/redeliver"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/logs/execution/{entry_id}/retry"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/publish"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/revert"): ({"csrf", "version"}, set()),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/toggle"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/archive"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/executions/{execution_id}/replay"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/flows/new"): ({"csrf"}, {"name", "document", "description", "payload", "intent", "run"}),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/edit"): ({"csrf"}, {"name", "document", "description", "payload", "intent", "run"}),
    ("post", "/console/w/{workspace_id}/flows/{flow_id}/executions/{execution_id}/retry"): ({"csrf"}, {"fromStep", "version"}),
    ("post", "/console/w/{workspace_id}/webhooks/{subscription_id}/test"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/webhooks/{subscription_id}/rotate-secret"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/webhooks/{subscription_id}/enable"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/webhooks/{subscription_id}/disable"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/integrations/{providerType}/workspace"): (
        {"csrf"},
        {"clientId", "clientSecret", "scopes", "apiBaseUrl", "webhookSecret", "webhookVerifyToken"},
    ),
    ("post", "/console/w/{workspace_id}/integrations/{providerType}/deployment"): (
        {"csrf"},
        {"clientId", "clientSecret", "scopes", "apiBaseUrl", "webhookSecret", "webhookVerifyToken"},
    ),
    ("post", "/console/w/{workspace_id}/integrations/{providerType}/workspace/remove"): ({"csrf"}, set()),
    ("post", "/console/w/{workspace_id}/integrations/{providerType}/deployment/remove"): ({"csrf"}, set()),
}

#: the handlers that serve GET and POST: their query on GET only
GET_QUERIES = {
    "/api/v1/oidc/authorize": FORMS[("post", "/api/v1/oidc/authorize")][0] | FORMS[("post", "/api/v1/oidc/authorize")][1],
    "/api/v1/oidc/end-session": {"id_token_hint", "post_logout_redirect_uri", "state", "client_id"},
    "/api/v1/oidc/userinfo": set(),
}


@pytest.fixture
async def document(aiohttp_client, make_app, database_url) -> dict[str, Any]:
    client = await aiohttp_client(make_app(database_url=database_url))
    response = await client.get("/openapi.json")
    assert response.status == 200
    return await response.json()


def form_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    """The schema of the operation's form body (its ``$ref`` resolved)."""
    content = document["paths"][path][method]["requestBody"]["content"]
    assert list(content) == [FORM], f"{method.upper()} {path}: {list(content)}"
    reference = content[FORM]["schema"]["$ref"]
    return document["components"]["schemas"][reference.rpartition("/")[2]]


def fill(schema: dict[str, Any], path: str) -> tuple[dict[str, str], str]:
    """A form of every declared field (an enum's first choice, else a placeholder) and the path
    with its parameters filled."""
    form = {
        name: field.get("const") or field["enum"][0] if "const" in field or "enum" in field else f"x-{name}" for name, field in schema["properties"].items()
    }
    return form, path.replace("{providerType}", "fakeoauth").replace("{name}", "fakeoauth")


async def test_every_form_route_publishes_its_fields_under_the_form_media_type(document):
    for (method, path), (required, optional) in FORMS.items():
        schema = form_schema(document, method, path)
        assert set(schema["properties"]) == required | optional, path
        assert set(schema.get("required", ())) == required, path
        for name, field in schema["properties"].items():
            assert field.get("type") == "string" and "anyOf" not in field, f"{path} {name}: a form field is text, never null"


async def test_the_forms_say_what_the_protocols_allow(document):
    token = form_schema(document, "post", "/api/v1/oidc/token")["properties"]
    assert token["grant_type"]["enum"] == ["authorization_code", "refresh_token", "client_credentials"]
    assert "PKCE" in token["code_verifier"]["description"]
    authorization = form_schema(document, "post", "/api/v1/oidc/authorize")["properties"]
    assert authorization["code_challenge_method"]["const"] == "S256"
    assert authorization["response_type"]["const"] == "code"
    assert form_schema(document, "post", "/api/v1/oidc/consent")["properties"]["decision"]["enum"] == ["allow", "deny"]
    for path in ("/connect/ui/providers/{name}", "/connect/ui/providers/{name}/oauth"):
        assert form_schema(document, "post", path)["patternProperties"] == {"^param:": {"type": "string"}}


async def test_the_query_of_a_get_and_post_handler_is_on_get_only(document):
    for path, names in GET_QUERIES.items():
        get, post = document["paths"][path]["get"], document["paths"][path]["post"]
        assert {p["name"] for p in get.get("parameters", ()) if p["in"] == "query"} == names, path
        assert not [p for p in post.get("parameters", ()) if p["in"] == "query"], path
        assert "requestBody" not in get, path
        assert list(post["requestBody"]["content"]) == [FORM], path
    authorize = {p["name"]: p for p in document["paths"]["/api/v1/oidc/authorize"]["get"]["parameters"]}
    assert {name for name, p in authorize.items() if p["required"]} == {"response_type", "client_id", "redirect_uri"}
    assert authorize["prompt"]["schema"] == {"type": "string"} and "consent" in authorize["prompt"]["description"]
    assert "title" not in authorize["state"]["schema"]


async def test_the_pages_document_their_query(document):
    for path, names in (("/api/v1/oidc/login", ["interaction"]), ("/api/v1/oidc/consent", ["interaction", "workspace"]), ("/api/v1/oidc/signout", ["t"])):
        assert [p["name"] for p in document["paths"][path]["get"]["parameters"]] == names


async def test_the_document_with_its_forms_is_valid_openapi(document):
    openapi_spec_validator.validate(document)


@pytest.fixture
async def fake_provider():
    """The connection tests' fake provider (a local server) and its module."""
    spec = importlib.util.spec_from_file_location("patchbay_tests_fake_provider", Path(__file__).parents[1] / "connections" / "fake_provider.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.FakeProvider()
    await server.start()
    yield module, server
    await server.stop()


async def test_every_form_route_takes_a_form_of_its_declared_fields(aiohttp_client, make_app, database_url, fake_provider):
    """Each operation with a form body, posted every field it declares (and only those), answers
    without a server error; the list comes from the document, so a new form route is covered."""
    module, server = fake_provider
    app = make_app(database_url=database_url, plugins=[module.FakePack(server.base)], providers=module.provider_settings())
    client = await aiohttp_client(app)
    document = await (await client.get("/openapi.json")).json()
    posted = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if FORM not in operation.get("requestBody", {}).get("content", {}):
                continue
            form, url = fill(form_schema(document, method, path), path)
            response = await client.request(method, url, data=form, allow_redirects=False)
            assert response.status < 500, f"{method.upper()} {path}: {response.status} {await response.text()}"
            posted.add((method, path))
    assert posted == set(FORMS)


def test_a_form_model_is_flat_text():
    with pytest.raises(TypeError, match="count"):

        @form_model
        class Counted:
            count: int

    @dataclasses.dataclass
    class Nested:
        inner: dict[str, str]

    with pytest.raises(TypeError, match="inner"):
        accepts(Nested, media=FORM)
    accepts(Nested)  # a JSON body may be any model
