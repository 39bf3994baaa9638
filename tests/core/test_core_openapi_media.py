"""The answers that are not JSON models (pages, redirects, text, SVG, the document itself) and the
protocol endpoints' JSON are described in /openapi.json, and the real answers are what it says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import openapi_spec_validator
import pytest
from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.responses import ANY_MEDIA, HTML, REDIRECT, declared_responses, reply, returns
from patchbay.core.settings import MetricsSettings

_spec = importlib.util.spec_from_file_location("patchbay_tests_openapi_answers", Path(__file__).with_name("openapi_answers.py"))
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

PROVIDER = "accelo"  # an OAuth provider of the installed packs
CRON_SECRET = "cron-secret-for-tests"
METRICS_TOKEN = "metrics-token-for-tests"

#: every operation of this area: each declares at least one success (2xx or 3xx) answer
OPERATIONS = [
    ("GET", "/"),
    ("GET", "/health"),
    ("GET", "/health/live"),
    ("GET", "/livez"),
    ("GET", "/health/ready"),
    ("GET", "/readyz"),
    *[
        ("GET", f"/api/cron/{name}")
        for name in (
            "token-refresh",
            "retry-failed-syncs",
            "resume-imports",
            "renew-webhook-subscriptions",
            "poll-triggers",
            "run-schedules",
            "connection-health",
            "data-sync",
        )
    ],
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("GET", "/connect/v1/providers/{providerType}/logo.svg"),
    ("GET", "/connect/ui"),
    ("GET", "/connect/ui/providers"),
    ("GET", "/connect/ui/providers/{name}"),
    ("POST", "/connect/ui/providers/{name}"),
    ("POST", "/connect/ui/providers/{name}/oauth"),
    ("GET", "/connect/ui/oauth/return"),
    ("GET", "/connect/ui/done"),
    ("GET", "/connect/ui/static/{file}"),
    ("GET", "/.well-known/openid-configuration"),
    ("GET", "/api/v1/oidc/jwks"),
    ("POST", "/api/v1/oidc/introspect"),
    ("POST", "/api/v1/oidc/revoke"),
    ("POST", "/api/v1/oidc/register"),
    ("GET", "/api/v1/oidc/userinfo"),
    ("POST", "/api/v1/oidc/userinfo"),
    ("GET", "/api/v1/oidc/authorize"),
    ("POST", "/api/v1/oidc/authorize"),
    ("GET", "/api/v1/oidc/login"),
    ("POST", "/api/v1/oidc/login"),
    ("GET", "/api/v1/oidc/consent"),
    ("POST", "/api/v1/oidc/consent"),
    ("GET", "/api/v1/oidc/end-session"),
    ("POST", "/api/v1/oidc/end-session"),
    ("GET", "/api/v1/oidc/signout"),
    ("POST", "/api/v1/oidc/signout"),
    ("GET", "/api/v1/oidc/federation/callback"),
    ("GET", "/auth/{providerType}/login"),
    ("GET", "/auth/{providerType}/callback"),
    ("GET", "/auth/{providerType}/begin"),
    ("POST", "/auth/{providerType}/begin"),
    ("POST", "/auth/{providerType}/refresh/{accountId}"),
    ("GET", "/auth/{providerType}/deauthorize"),
    ("POST", "/auth/{providerType}/deauthorize"),
    ("GET", "/byoa/{providerType}/credentials"),
    ("POST", "/byoa/{providerType}/credentials"),
    ("DELETE", "/byoa/{providerType}/credentials"),
]


@pytest.fixture
async def api(aiohttp_client, make_app, database_url):
    return await aiohttp_client(make_app(database_url=database_url, cron_secret=CRON_SECRET, metrics=MetricsSettings(token=METRICS_TOKEN)))


@pytest.fixture
async def document(api) -> dict:
    response = await api.get("/openapi.json")
    assert response.status == 200
    return await response.json()


async def test_every_operation_of_the_area_declares_its_success_answer(document):
    missing = []
    for method, path in OPERATIONS:
        responses = document["paths"][path][method.lower()]["responses"]
        successes = {status: answer for status, answer in responses.items() if status[0] in "23"}
        described = [answer for answer in successes.values() if answer.get("content") or answer.get("headers") or "no body" in answer["description"]]
        if "default" in responses or not described:
            missing.append(f"{method} {path}")
    assert missing == []


async def test_the_document_with_media_and_redirects_is_valid_openapi(document):
    openapi_spec_validator.validate(document)


async def test_non_json_answers_are_published_with_their_media_type_or_headers(document):
    paths = document["paths"]
    assert paths["/metrics"]["get"]["responses"]["200"]["content"]["text/plain"]["schema"]["type"] == "string"
    assert set(paths["/connect/v1/providers/{providerType}/logo.svg"]["get"]["responses"]["200"]["content"]) == {"image/svg+xml"}
    assert set(paths["/api/v1/oidc/login"]["get"]["responses"]["200"]["content"]) == {"text/html"}
    authorize = paths["/api/v1/oidc/authorize"]["get"]["responses"]
    assert "content" not in authorize["302"] and authorize["302"]["headers"]["Location"]["required"] is True
    assert authorize["4XX"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/OAuthError"}
    assert document["components"]["schemas"]["OAuthError"]["required"] == ["error", "error_description"]
    assert paths["/openapi.json"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["required"] == ["openapi", "info", "paths"]
    revoke = paths["/api/v1/oidc/revoke"]["post"]["responses"]["200"]
    assert "content" not in revoke and "headers" not in revoke
    # the connect API keeps its own error envelope
    assert paths["/auth/{providerType}/callback"]["get"]["responses"]["4XX"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


#: (method, path as documented, path requested, request options): answers reachable without state
SIMPLE_ANSWERS = [
    ("GET", "/", "/", {}),
    ("GET", "/health", "/health", {}),
    ("GET", "/livez", "/livez", {}),
    ("GET", "/health/live", "/health/live", {}),
    ("GET", "/readyz", "/readyz", {}),
    ("GET", "/health/ready", "/health/ready", {}),
    ("GET", "/api/cron/connection-health", "/api/cron/connection-health", {"headers": {"Authorization": f"Bearer {CRON_SECRET}"}}),
    ("GET", "/metrics", "/metrics", {"headers": {"Authorization": f"Bearer {METRICS_TOKEN}"}}),
    ("GET", "/metrics", "/metrics", {}),
    ("GET", "/openapi.json", "/openapi.json", {}),
    ("GET", "/connect/v1/providers/{providerType}/logo.svg", f"/connect/v1/providers/{PROVIDER}/logo.svg", {}),
    ("GET", "/connect/ui/static/{file}", "/connect/ui/static/connect-page.js", {}),
    ("GET", "/connect/ui", "/connect/ui", {}),
    ("GET", "/connect/ui/providers", "/connect/ui/providers", {}),
    ("GET", "/connect/ui/done", "/connect/ui/done", {}),
    ("GET", "/.well-known/openid-configuration", "/.well-known/openid-configuration", {}),
    ("GET", "/api/v1/oidc/jwks", "/api/v1/oidc/jwks", {}),
    ("GET", "/api/v1/oidc/authorize", "/api/v1/oidc/authorize?client_id=nobody", {}),
    ("GET", "/api/v1/oidc/userinfo", "/api/v1/oidc/userinfo", {}),
    ("POST", "/api/v1/oidc/register", "/api/v1/oidc/register", {"json": {"redirect_uris": "not a list"}}),
    ("POST", "/api/v1/oidc/introspect", "/api/v1/oidc/introspect", {"data": {"token": "x"}}),
    ("GET", "/api/v1/oidc/login", "/api/v1/oidc/login", {}),
    ("GET", "/api/v1/oidc/consent", "/api/v1/oidc/consent", {}),
    ("GET", "/api/v1/oidc/end-session", "/api/v1/oidc/end-session", {}),
    ("GET", "/api/v1/oidc/signout", "/api/v1/oidc/signout", {}),
    ("POST", "/api/v1/oidc/signout", "/api/v1/oidc/signout", {"data": {}}),
    ("GET", "/api/v1/oidc/federation/callback", "/api/v1/oidc/federation/callback", {}),
    ("GET", "/auth/{providerType}/begin", f"/auth/{PROVIDER}/begin?state=forged.state", {}),
    ("POST", "/auth/{providerType}/begin", f"/auth/{PROVIDER}/begin", {"data": {"state": "forged.state"}}),
    ("GET", "/auth/{providerType}/callback", f"/auth/{PROVIDER}/callback", {}),
    ("GET", "/auth/{providerType}/deauthorize", f"/auth/{PROVIDER}/deauthorize", {}),
]


@pytest.mark.parametrize(("method", "path", "url", "options"), SIMPLE_ANSWERS, ids=[f"{m} {u}" for m, _, u, _ in SIMPLE_ANSWERS])
@pytest.mark.slow  # about 5 s (setup and call)
async def test_the_real_answer_is_what_the_document_says(api, document, method, path, url, options):
    response = await api.request(method, url, allow_redirects=False, **options)
    assert response.status < 500, await response.text()
    await answers.assert_documented(document, method, path, response)


async def test_reply_refuses_an_answer_declared_as_a_page(aiohttp_client):
    @returns(HTML)
    async def page(request: web.Request) -> web.Response:
        """A page answered by mistake as JSON."""
        return reply(request, {"title": "x"})

    app = web.Application()
    app.router.add_get("/page", page)
    client = await aiohttp_client(app)
    assert (await client.get("/page")).status == 500


def test_a_redirect_declares_its_location_header():
    @returns(REDIRECT, status=302, description="Elsewhere")
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/elsewhere")

    declared = declared_responses(moved)[302]
    assert declared.adapter is None and declared.model.headers["Location"]["required"] is True


async def test_an_absent_key_of_a_typed_dict_model_stays_absent(api):
    """``/health`` declares ``pluginErrors`` as a key that may be absent: not sent as null."""
    assert await (await api.get("/health")).json() == {"status": "ok", "database": api.server.app[SERVICES].db.dialect}


async def test_a_route_that_passes_any_media_through_is_published_as_such(aiohttp_client, make_app):
    @returns(ANY_MEDIA, description="Whatever the upstream answered")
    async def passthrough(request: web.Request) -> web.Response:
        """Answers what it is given."""
        return web.Response(body=b"\x89PNG", content_type="image/png")

    app = make_app()
    app.router.add_get("/passthrough", passthrough)
    client = await aiohttp_client(app)
    document = await (await client.get("/openapi.json")).json()
    assert document["paths"]["/passthrough"]["get"]["responses"]["200"]["content"] == {"*/*": {"schema": {}}}
    await answers.assert_documented(document, "GET", "/passthrough", await client.get("/passthrough"))


async def test_the_browser_routes_document_their_query_parameters(document):
    def names(path: str) -> set[str]:
        return {p["name"] for p in document["paths"][path]["get"].get("parameters", []) if p["in"] == "query"}

    assert {"redirect_uri", "account_id", "metadata", "scopes", "connection_id", "response", "token"} <= names("/auth/{providerType}/login")
    assert {"state", "code", "error"} <= names("/auth/{providerType}/callback")
    assert names("/connect/ui") == {"session"} and names("/auth/{providerType}/begin") == {"state"}
