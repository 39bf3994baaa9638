"""The integrations API: per provider, the deployment's (admin API key) and a workspace's
(``workspace.admin``) OAuth app, scopes, API base URL and webhook secrets; stored encrypted, never
answered, validated with 4xx answers in the error envelope, and in effect at once."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.integrations.models import IntegrationSetting
from patchbay.core.settings import AdminSettings
from patchbay.core.testing import create_workspace_with_key

OPERATOR = {"x-api-key": "operator-secret"}
SECRET = "client-secret-value-1234"
HOOK_SECRET = "webhook-secret-value-5678"


@pytest.fixture
async def api(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(admin=AdminSettings(api_key="operator-secret"), providers={"hubspot": {"scopes": ["file.scope"]}}))
    client.workspace = await create_workspace_with_key(client.server.app)
    return client


async def _json(response):
    return response.status, await response.json()


async def test_the_deployment_sets_an_oauth_app_and_no_secret_is_answered(api):
    body = {"clientId": "deploy-id", "clientSecret": SECRET, "scopes": ["a", "b"]}
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/github", json=body, headers=OPERATOR))
    assert status == 200, answer
    assert answer["level"] == "deployment" and answer["clientId"] == "deploy-id" and answer["clientSecretSet"] is True
    assert len(answer["clientSecretFingerprint"]) == 12 and SECRET not in str(answer)
    assert answer["effective"]["oauthAppFrom"] == "deployment" and answer["effective"]["scopes"] == ["a", "b"] and answer["effective"]["canConnect"]
    services = api.server.app[SERVICES]
    async with services.db.session() as session:
        row = await session.scalar(select(IntegrationSetting).where(IntegrationSetting.provider == "github"))
    assert SECRET not in row.client_secret and services.secrets.decrypt(row.client_secret) == SECRET, "stored encrypted"
    status, got = await _json(await api.get("/connect/v1/deployment/integrations/github", headers=OPERATOR))
    assert status == 200 and got["clientSecretFingerprint"] == answer["clientSecretFingerprint"]
    status, listed = await _json(await api.get("/connect/v1/deployment/integrations", headers=OPERATOR))
    assert [item["provider"] for item in listed["data"]] == ["github"]


async def test_the_deployment_routes_are_the_operators_only(api):
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/github", json={"scopes": ["x"]}, headers=api.workspace["headers"]))
    assert status == 403 and answer["statusCode"] == 403 and "admin API key" in answer["message"]
    status, answer = await _json(await api.get("/connect/v1/deployment/integrations/github"))
    assert status == 401 and answer["statusCode"] == 401


async def test_a_workspace_needs_workspace_admin(api):
    services = api.server.app[SERVICES]
    reader = await create_workspace_with_key(services, permissions=["connections.view"])
    status, answer = await _json(await api.patch("/connect/v1/integrations/github", json={"scopes": ["x"]}, headers=reader["headers"]))
    assert status == 403 and "workspace.admin" in answer["message"]


async def test_the_workspace_level_wins_and_deleting_falls_back(api):
    headers = api.workspace["headers"]
    await api.patch("/connect/v1/deployment/integrations/github", json={"clientId": "deploy-id", "clientSecret": SECRET}, headers=OPERATOR)
    status, answer = await _json(await api.patch("/connect/v1/integrations/github", json={"clientId": "own-id", "clientSecret": "own-secret"}, headers=headers))
    assert status == 200 and answer["level"] == "workspace" and answer["effective"]["clientId"] == "own-id"
    assert answer["effective"]["oauthAppFrom"] == "workspace"
    status, answer = await _json(await api.delete("/connect/v1/integrations/github", headers=headers))
    assert status == 200 and answer == {"provider": "github", "deleted": True}
    status, answer = await _json(await api.get("/connect/v1/integrations/github", headers=headers))
    assert answer["stored"] is False and answer["effective"]["clientId"] == "deploy-id" and answer["effective"]["oauthAppFrom"] == "deployment"
    status, answer = await _json(await api.delete("/connect/v1/integrations/github", headers=headers))
    assert status == 404 and answer["statusCode"] == 404


async def test_the_file_is_the_seed(api):
    """A stored value overrides the settings file's; removing it (null) brings the file's back."""
    status, answer = await _json(await api.get("/connect/v1/deployment/integrations/hubspot", headers=OPERATOR))
    assert answer["effective"]["scopes"] == ["file.scope"] and answer["effective"]["scopesFrom"] == "file"
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/hubspot", json={"scopes": ["stored"]}, headers=OPERATOR))
    assert answer["effective"]["scopes"] == ["stored"] and answer["effective"]["scopesFrom"] == "deployment"
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/hubspot", json={"scopes": None}, headers=OPERATOR))
    assert status == 200 and answer["effective"]["scopes"] == ["file.scope"] and answer["stored"] is False


#: (provider, body, status, words of the message): one app for them all (an app takes a second or two to build)
BAD_INPUT = [
    ("stripe-api-key", {"clientId": "x", "clientSecret": "y"}, 400, "not OAuth"),
    ("nope-no-such", {"scopes": ["a"]}, 404, "Provider not found"),
    ("github", {"clientId": "x"}, 400, "clientSecret is required"),
    ("github", {"clientSecret": "x"}, 400, "needs a clientId"),
    ("github", {"scopes": "a b"}, 400, "scopes"),
    ("github", {"scopes": ["a b"]}, 400, "scopes[0]"),
    ("github", {"colour": "red"}, 400, "unknown field(s) colour"),
    ("github", {"apiBaseUrl": "ftp://example.com"}, 400, "apiBaseUrl"),
    ("github", {"apiBaseUrl": "https://{tenant}.example.com"}, 400, "not connection parameters"),
    ("github", {"apiBaseUrl": "https://example.com/?a=1"}, 400, "no query"),
    ("github", {"apiBaseUrl": "https://a{.example.com"}, 400, "unbalanced"),
    ("github", {"apiBaseUrl": "https://a{}.example.com"}, 400, "must name a connection parameter"),
    ("github", {"apiBaseUrl": "https://a{0}.example.com"}, 400, "not connection parameters"),
    ("github", {"apiBaseUrl": "https://["}, 400, "apiBaseUrl"),
    ("github", {"apiBaseUrl": 5}, 400, "apiBaseUrl"),
    ("github", {"scopes": [""]}, 400, "scopes[0]"),
    ("github", {"clientId": "x" * 501, "clientSecret": "s"}, 400, "at most 500"),
    ("github", {"clientId": ""}, 400, "clientId"),
    ("github", {"clientId": "a\nb", "clientSecret": "s"}, 400, "control characters"),
    ("stripe-api-key", {"webhookSecret": "s"}, 400, "deployment only"),
    ("notion", {"webhookSecret": "s"}, 400, "deployment only"),
]


async def test_bad_input_is_a_4xx_naming_the_problem(api):
    problems = []
    for path, body, status, words in BAD_INPUT:
        got, answer = await _json(await api.patch(f"/connect/v1/integrations/{path}", json=body, headers=api.workspace["headers"]))
        problems.append(None if got == status and answer["statusCode"] == status and words in answer["message"] else (path, body, answer))
    assert [problem for problem in problems if problem] == []
    async with api.server.app[SERVICES].db.session() as session:
        assert (await session.scalars(select(IntegrationSetting))).all() == [], "nothing was stored"


async def test_webhook_secrets_need_a_provider_that_receives_webhooks(api):
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/notion", json={"webhookSecret": HOOK_SECRET}, headers=OPERATOR))
    assert status == 400 and "receives no webhooks" in answer["message"]
    status, answer = await _json(await api.patch("/connect/v1/deployment/integrations/github-pat", json={"webhookSecret": HOOK_SECRET}, headers=OPERATOR))
    assert status == 200 and answer["webhookSecretSet"] and answer["effective"]["webhookSecretFrom"] == "deployment" and HOOK_SECRET not in str(answer)


async def test_http_and_private_base_urls_are_refused_unless_insecure_targets_are_allowed(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(admin=AdminSettings(api_key="operator-secret"), allow_insecure_targets=False))
    for url, words in (("http://api.example.com", "must use https"), ("https://127.0.0.1/v1", "private address"), ("https://localhost/v1", "private")):
        status, answer = await _json(await client.patch("/connect/v1/deployment/integrations/github", json={"apiBaseUrl": url}, headers=OPERATOR))
        assert status == 400 and words in answer["message"] and "--allow-insecure-targets" in answer["message"], answer
    status, answer = await _json(
        await client.patch("/connect/v1/deployment/integrations/github", json={"apiBaseUrl": "https://ghe.example.com/api/v3/"}, headers=OPERATOR)
    )
    assert status == 200 and answer["apiBaseUrl"] == "https://ghe.example.com/api/v3" and answer["effective"]["apiBaseUrlFrom"] == "deployment"


async def test_a_base_url_may_use_the_providers_connection_parameters(api):
    status, answer = await _json(
        await api.patch("/connect/v1/integrations/zendesk", json={"apiBaseUrl": "https://{subdomain}.eu.example.com/api"}, headers=api.workspace["headers"])
    )
    assert (
        status == 200 and answer["effective"]["apiBaseUrl"] == "https://{subdomain}.eu.example.com/api" and answer["effective"]["apiBaseUrlFrom"] == "workspace"
    )


async def test_an_empty_change_stores_nothing(api):
    status, answer = await _json(await api.patch("/connect/v1/integrations/github", json={}, headers=api.workspace["headers"]))
    assert status == 200 and answer["stored"] is False
    status, answer = await _json(
        await api.patch("/connect/v1/integrations/github", json={"scopes": None, "apiBaseUrl": None}, headers=api.workspace["headers"])
    )
    assert status == 200 and answer["stored"] is False
