"""The console's integrations pages: a workspace's admins see every provider and set their
workspace's OAuth app, scopes and API base URL; operators also set the deployment's, with its
webhook secret. Forms carry the session's CSRF token and write through the service the API uses;
secrets are never shown."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.integrations import service as integrations
from tests.console.conftest import csrf_of

SECRET = "console-client-secret-value"
HOOK = "console-webhook-secret-value"


async def _get(http, path: str) -> tuple[int, str]:
    async with http.get(http.base + path) as response:
        return response.status, await response.text()


async def _post(http, path: str, form: dict) -> tuple[int, str]:
    async with http.post(http.base + path, data=form, allow_redirects=False) as response:
        return response.status, await response.text()


async def test_a_workspace_admin_sets_the_workspaces_oauth_app(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/integrations"
    status, page = await _get(http, base + "?q=github")
    assert status == 200 and f'href="{base}/github"' in page
    status, page = await _get(http, base + "/github")
    assert status == 200 and "This workspace" in page and "The deployment" not in page, "the deployment's form is for operators"
    form = {"csrf": csrf_of(page), "clientId": "own-client", "clientSecret": SECRET, "scopes": "repo read:user", "apiBaseUrl": ""}
    status, page = await _post(http, base + "/github/workspace", form)
    assert status == 200 and "Saved" in page and SECRET not in page
    described = await integrations.describe(services, workspace_id=admin.workspace_id, provider_name="github")
    assert described["clientId"] == "own-client" and described["scopes"] == ["repo", "read:user"] and described["apiBaseUrl"] is None
    assert described["clientSecretFingerprint"] in page
    status, page = await _get(http, base)
    row = re.search(r"<tr>(?:(?!</tr>).)*?>github</span>(?:(?!</tr>).)*</tr>", page, re.S).group(0)
    assert "this workspace&#39;s OAuth app" in row or "this workspace's OAuth app" in row

    # the deployment's form is refused to a workspace admin who is not an operator
    status, page = await _post(http, base + "/github/deployment", {"csrf": form["csrf"], "clientId": "x", "clientSecret": "y"})
    assert status == 403
    assert (await integrations.describe(services, workspace_id=None, provider_name="github"))["stored"] is False

    # remove falls back
    status, _ = await _post(http, base + "/github/workspace/remove", {"csrf": form["csrf"]})
    assert status == 303
    assert (await integrations.describe(services, workspace_id=admin.workspace_id, provider_name="github"))["stored"] is False


async def test_bad_input_and_a_missing_csrf_token_store_nothing(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/integrations"
    status, page = await _get(http, base + "/github")
    csrf = csrf_of(page)
    status, page = await _post(http, base + "/github/workspace", {"csrf": csrf, "clientId": "no-secret"})
    assert status == 400 and "clientSecret is required" in page
    status, page = await _post(http, base + "/github/workspace", {"clientId": "a", "clientSecret": "b"})
    assert status == 403
    status, page = await _post(http, base + "/stripe-api-key/workspace", {"csrf": csrf, "clientId": "a", "clientSecret": "b"})
    assert status == 400 and "not OAuth" in page
    status, page = await _get(http, base + "/no-such-provider")
    assert status == 404
    assert await integrations.stored_list(services, workspace_id=admin.workspace_id) == []


async def test_an_operator_sets_the_deployments_webhook_secret(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    operator = await make_person("", operator=True, email="op@example.com")
    http = await sign_in(operator)
    base = f"/console/w/{admin.workspace_id}/integrations"
    status, page = await _get(http, base + "/facebook")
    assert status == 200 and "The deployment" in page and 'name="webhookSecret"' in page
    status, page = await _post(http, base + "/facebook/deployment", {"csrf": csrf_of(page), "webhookSecret": HOOK, "scopes": "pages_show_list"})
    assert status == 200 and "Saved" in page and HOOK not in page
    described = await integrations.describe(services, workspace_id=None, provider_name="facebook")
    assert described["webhookSecretSet"] and described["scopes"] == ["pages_show_list"] and described["effective"]["webhookSecretFrom"] == "deployment"
    file = services.registry.provider_secrets("facebook")
    assert (await integrations.webhook_secrets(services, "facebook", file)).webhook_secret == HOOK
    status, page = await _get(http, base)
    assert re.search(r">facebook</span>(?:(?!</tr>).)*>set<", page, re.S)
