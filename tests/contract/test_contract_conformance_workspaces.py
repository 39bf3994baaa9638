"""The tenant routes (accounts, workspaces, API keys, connect sessions, billing, approvals) answer
through response models: /openapi.json gives each a success schema, and schemathesis' positive
phases find every answer of theirs matching it (``response_schema_conformance``) and none a server
error, on SQLite and PostgreSQL.

Bounded for CI like ``test_contract_conformance``: a few examples per operation and a budget after
which the run fails instead of hanging. ``/accounts`` is called with the operator's admin API key,
every other route with the workspace's; the ones it may not call (a signed-in user's invite and join
routes, the payment provider's, which is not configured) answer their documented errors, which are
checked against ``Error`` the same way."""

from __future__ import annotations

import re
from datetime import timedelta

import aiohttp
import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.service import gate_connect
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.security.auth import Principal
from patchbay.core.settings import AdminSettings
from patchbay.core.testing import sign_access_token
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import create_invite
from tests.contract.conformance import Operations

BUDGET_SECONDS = 150
MAX_EXAMPLES = 4
OPERATOR_KEY = "operator-key-conformance"
PATHS = r"^/(accounts|billing/webhook|connect/v1/(workspaces|api-keys|connect-sessions|billing|approvals))(/|$)"

#: every operation of these areas and the status it answers on success
OPERATIONS = {
    ("post", "/accounts"): "201",
    ("get", "/accounts"): "200",
    ("get", "/accounts/{id}"): "200",
    ("patch", "/accounts/{id}"): "200",
    ("delete", "/accounts/{id}"): "200",
    ("get", "/connect/v1/workspaces"): "200",
    ("post", "/connect/v1/workspaces"): "201",
    ("get", "/connect/v1/workspaces/invite/validate/{token}"): "200",
    ("post", "/connect/v1/workspaces/invite/accept/{token}"): "201",
    ("post", "/connect/v1/workspaces/{id}/invite"): "201",
    ("delete", "/connect/v1/workspaces/{id}/invites/{inviteId}"): "200",
    ("get", "/connect/v1/workspaces/{id}/members"): "200",
    ("patch", "/connect/v1/workspaces/{id}/members/{userId}"): "200",
    ("delete", "/connect/v1/workspaces/{id}/members/{userId}"): "200",
    ("get", "/connect/v1/workspaces/public/{slug}"): "200",
    ("post", "/connect/v1/workspaces/join/request"): "201",
    ("post", "/connect/v1/workspaces/join/link/{workspaceId}"): "201",
    ("get", "/connect/v1/workspaces/{id}/join-requests"): "200",
    ("post", "/connect/v1/workspaces/{id}/join-requests/{requestId}/approve"): "201",
    ("post", "/connect/v1/workspaces/{id}/join-requests/{requestId}/deny"): "201",
    ("post", "/connect/v1/workspaces/{id}/shareable-link"): "201",
    ("delete", "/connect/v1/workspaces/{id}/shareable-link"): "200",
    ("get", "/connect/v1/workspaces/{id}/audit-events"): "200",
    ("get", "/connect/v1/api-keys"): "200",
    ("delete", "/connect/v1/api-keys/{id}"): "200",
    ("post", "/connect/v1/connect-sessions"): "201",
    ("get", "/connect/v1/connect-sessions"): "200",
    ("get", "/connect/v1/connect-sessions/{id}"): "200",
    ("delete", "/connect/v1/connect-sessions/{id}"): "200",
    ("get", "/connect/v1/billing/plan"): "200",
    ("get", "/connect/v1/billing/usage"): "200",
    ("get", "/connect/v1/billing/usage/history"): "200",
    ("post", "/connect/v1/billing/checkout"): "201",
    ("post", "/connect/v1/billing/portal"): "201",
    ("delete", "/connect/v1/billing/subscription"): "200",
    ("post", "/connect/v1/billing/subscription/resume"): "201",
    ("post", "/billing/webhook"): "200",
    ("get", "/connect/v1/approvals/policy"): "200",
    ("patch", "/connect/v1/approvals/policy"): "200",
    ("get", "/connect/v1/approvals"): "200",
    ("get", "/connect/v1/approvals/pending"): "200",
    ("get", "/connect/v1/approvals/{id}"): "200",
    ("post", "/connect/v1/approvals/{id}/approve"): "201",
    ("post", "/connect/v1/approvals/{id}/deny"): "201",
}


@pytest.fixture
def make_app(make_app):
    """The app with an operator (``[admin] api_key``), so that ``/accounts`` answers data."""

    def make(**overrides):
        return make_app(admin=AdminSettings(api_key=OPERATOR_KEY), **overrides)

    return make


async def test_every_tenant_operation_publishes_a_success_schema(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    document = await (await client.get("/openapi.json")).json()
    found = {(method, path) for path, item in document["paths"].items() for method in item if re.match(PATHS, path)}
    assert found == set(OPERATIONS)
    for (method, path), status in OPERATIONS.items():
        responses = document["paths"][path][method]["responses"]
        assert "default" not in responses and [code for code in responses if code[0] == "2"] == [status], (method, path, responses)
        assert responses[status]["content"]["application/json"]["schema"], (method, path)


async def _seed(api) -> dict[str, str]:
    """What the routes read, so that lists and lookups answer data: connect sessions, approval
    requests held by the policy, an invite, join requests of signed-in users. Spares for the
    revokes and the decisions, which would otherwise take away what the others read (the run's own
    API key is never the one deleted)."""
    app, workspace_id = api.server.app, api.workspace["workspace_id"]
    session, spare_session = [
        await api.call("POST", "/connect/v1/connect-sessions", expect=201, json={"endUser": {"id": f"user-{n}", "email": "u@example.com"}}) for n in (1, 2)
    ]
    await api.call("PATCH", "/connect/v1/approvals/policy", expect=200, json={"enabled": True, "providers": [api.provider]})
    end_user = Principal("api_key", workspace_id, frozenset({"connections.write"}), subject="end_user:someone")
    approvals, joins = [], []
    for _ in range(3):
        async with app[SERVICES].db.transaction(tenant=workspace_id) as db:
            approvals.append(
                await gate_connect(
                    app[SERVICES],
                    db,
                    workspace_id=workspace_id,
                    provider=api.provider,
                    principal=end_user,
                    payload={"credentials": {"apiKey": "k"}, "metadata": {}, "params": {}},
                )
            )
    for name in ("joiner-1", "joiner-2"):
        async with app[SERVICES].db.transaction() as db:
            user = await create_user(db, email=f"{name}@example.com", password=None, name=name)
        token = await sign_access_token(app, {"sub": user.id, "client_id": "console"})
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
            async with http.post(f"{api.base_url}/connect/v1/workspaces/join/request", json={"workspaceId": workspace_id}) as response:
                assert response.status == 201, await response.text()
                joins.append((await response.json())["id"])
    async with app[SERVICES].db.transaction(tenant=workspace_id) as db:
        _, invite_token = await create_invite(
            db, app[SERVICES].secrets, workspace_id=workspace_id, email="invited@example.com", role="viewer", ttl=timedelta(days=1), invited_by=None
        )
        spare_invite, _ = await create_invite(
            db, app[SERVICES].secrets, workspace_id=workspace_id, email="withdrawn@example.com", role="viewer", ttl=timedelta(days=1), invited_by=None
        )
        spare_key = (await create_api_key(db, app[SERVICES].secrets, workspace_id=workspace_id, name="spare")).record.id
    async with aiohttp.ClientSession(headers={"x-api-key": OPERATOR_KEY}) as http:
        async with http.post(f"{api.base_url}/accounts", json={"name": "Spare account"}) as response:
            assert response.status == 201, await response.text()
            spare_account = (await response.json())["id"]
    return {
        "workspace": workspace_id,
        "session": session["id"],
        "spare_session": spare_session["id"],
        "approval": approvals[0],
        "approve": approvals[1],
        "deny": approvals[2],
        "approve_join": joins[0],
        "deny_join": joins[1],
        "invite": invite_token,
        "spare_key": spare_key,
        "spare_invite": spare_invite.id,
        "spare_account": spare_account,
    }


def _parameters(seeded: dict[str, str]) -> tuple[dict[str, str], list[Operations]]:
    """The path parameters that name seeded things, per operation (``id`` is a workspace, an
    account, a session, an approval or an API key by route; ``token`` the invite's, which accepting
    with the API key does not use up); the operator's key for ``/accounts``."""
    values = {"path.id": seeded["workspace"], "path.workspaceId": seeded["workspace"], "path.token": seeded["invite"]}
    operator = {"x-api-key": OPERATOR_KEY}
    operations = [
        Operations('include-path-regex = "^/connect/v1/connect-sessions/"', {"path.id": seeded["session"]}),
        Operations('include-operation-id = "delete_revoke_session"', {"path.id": seeded["spare_session"]}),
        Operations('include-operation-id = "get_get_request"', {"path.id": seeded["approval"]}),
        Operations('include-operation-id = "post_approve"', {"path.id": seeded["approve"]}),
        Operations('include-operation-id = "post_deny"', {"path.id": seeded["deny"]}),
        Operations('include-operation-id = "delete_revoke_key"', {"path.id": seeded["spare_key"]}),
        Operations('include-operation-id = "delete_revoke_invite"', {"path.inviteId": seeded["spare_invite"]}),
        Operations('include-operation-id = "post_approve_join_request"', {"path.requestId": seeded["approve_join"]}),
        Operations('include-operation-id = "post_deny_join_request"', {"path.requestId": seeded["deny_join"]}),
        Operations('include-operation-id = "delete_delete_account"', {"path.id": seeded["spare_account"]}, operator),
        Operations('include-path-regex = "^/accounts"', {}, operator),
    ]
    return values, operations


@pytest.mark.timeout(BUDGET_SECONDS + 60)
async def test_tenant_answers_match_the_document(live_api, conformance):
    await conformance(PATHS, *_parameters(await _seed(live_api)), budget=BUDGET_SECONDS, max_examples=MAX_EXAMPLES)
