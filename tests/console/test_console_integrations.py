"""The integrations page over HTTP: workspace admins and operators; per provider whether it can connect in the
workspace (API key; the workspace's OAuth app; the deployment's; none), its webhook URL and whether
its webhook secret is set, never a secret."""

from __future__ import annotations

import re

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import byoa

WEBHOOK_SECRET = "deployment-webhook-secret-value"
CLIENT_SECRET = "deployment-client-secret-value"
OWN_SECRET = "workspace-client-secret-value"


@pytest.fixture
def console_settings():
    return {"providers": {"facebook": {"webhook_secret": WEBHOOK_SECRET}, "hubspot": {"client_id": "hub-id", "client_secret": CLIENT_SECRET}}}


async def _page(http, path: str) -> tuple[int, str]:
    async with http.get(http.base + path) as response:
        return response.status, await response.text()


def row_of(page: str, name: str) -> str:
    found = re.search(r"<tr>(?:(?!</tr>).)*?<span class=\"mono muted\">" + re.escape(name) + r"</span>(?:(?!</tr>).)*</tr>", page, re.S)
    assert found, f"no row for {name}"
    return found.group(0)


async def test_an_operator_sees_how_each_provider_connects(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    operator = await make_person("", operator=True, email="op@example.com")
    notion = services.registry.provider("notion")
    await byoa.save(services, workspace_id=admin.workspace_id, provider=notion, client_id="own-id", client_secret=OWN_SECRET, scopes=None)
    http = await sign_in(operator)
    status, page = await _page(http, f"/console/w/{admin.workspace_id}/integrations")
    assert status == 200
    assert "this workspace&#39;s OAuth app" in row_of(page, "notion") or "this workspace's OAuth app" in row_of(page, "notion")
    assert "the deployment&#39;s OAuth app" in row_of(page, "hubspot") or "the deployment's OAuth app" in row_of(page, "hubspot")
    assert "<strong>no</strong>" in row_of(page, "github")
    facebook = row_of(page, "facebook")
    assert f"{console_server.base}/webhook/facebook" in facebook and ">set" in facebook
    assert "not set" in row_of(page, "instagram") or "no webhooks" in row_of(page, "instagram")
    for secret in (WEBHOOK_SECRET, CLIENT_SECRET, OWN_SECRET):
        assert secret not in page
    assert 'href="/console/w/' + admin.workspace_id + '/integrations"' in page, "the nav shows it to operators"


@pytest.mark.parametrize("role", ["viewer", "manager"])  # admins see it: tests/integrations/test_integrations_console.py
async def test_a_member_below_admin_cannot_open_it(make_person, sign_in, role):
    person = await make_person(role)
    http = await sign_in(person)
    status, page = await _page(http, f"/console/w/{person.workspace_id}/integrations")
    assert status == 403 and "admin role" in page
    status, page = await _page(http, f"/console/w/{person.workspace_id}/")
    assert "/integrations" not in page, "nor is it in their nav"
