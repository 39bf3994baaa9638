"""The 401s of the connect API and the operator's routes say which credential was expected and why
the one sent failed, over HTTP against the app; an unknown, a revoked and an expired API key read
the same (``core.security.refusals``)."""

from datetime import timedelta

import pytest
from sqlalchemy import update

from patchbay.core.appkeys import SERVICES
from patchbay.core.security.models import ApiKey
from patchbay.core.security.service import issue_workspace_api_key, revoke_workspace_api_key
from patchbay.core.testing import sign_access_token
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.audit import Actor

SYSTEM = Actor("system")

EXPECTED = "send a workspace API key as `x-api-key: <key>`, or an access token of this deployment's identity provider as `Authorization: Bearer <token>`"
INACTIVE_KEY = (
    "Unauthorized: the API key is not active: it is unknown, revoked or expired (a workspace admin sees each key's state "
    f"with `GET /connect/v1/api-keys` or `patchbay api-keys list`); {EXPECTED}"
)


async def message(client, headers=None, path="/connect/v1/providers"):
    response = await client.get(path, headers=headers or {})
    body = await response.json()
    assert response.status == 401 and body["statusCode"] == 401, body
    return body["message"]


async def test_no_credential_names_both_credentials(client):
    assert await message(client) == f"Unauthorized: no credential was sent; {EXPECTED}"


async def test_unknown_revoked_and_expired_keys_read_the_same(client, workspace):
    services = client.server.app[SERVICES]
    revoked = await issue_workspace_api_key(services, workspace["workspace_id"], name="old", permissions=None, expires_in=None, actor=SYSTEM)
    await revoke_workspace_api_key(services, workspace["workspace_id"], revoked.record.id, actor=SYSTEM)
    expired = await issue_workspace_api_key(services, workspace["workspace_id"], name="short", permissions=None, expires_in=timedelta(hours=1), actor=SYSTEM)
    async with services.db.transaction() as session:
        await session.execute(update(ApiKey).where(ApiKey.id == expired.record.id).values(expires_at=utcnow() - timedelta(seconds=1)))
    unknown = "pb_" + "A" * 43
    messages = {key: await message(client, {"x-api-key": key}) for key in (unknown, revoked.key, expired.key)}
    assert set(messages.values()) == {INACTIVE_KEY}, messages
    assert (await client.get("/connect/v1/providers", headers=workspace["headers"])).status == 200


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"x-api-key": "pb_nope"}, "the value of `x-api-key` is not an API key of this deployment (those are `pb_` and 43 letters, digits, `-` or `_`)"),
        ({"x-api-key": "Bearer pb_" + "A" * 43}, "`x-api-key` carries the key alone, without a `Bearer ` scheme"),
        ({"x-api-key": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"}, "`x-api-key` carries a JWT; an access token goes in `Authorization: Bearer <token>`"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "the `Authorization` scheme `Basic` is not accepted here (only `Bearer`)"),
        ({"Authorization": "Bearer "}, "`Authorization: Bearer` carries no token"),
        ({"Authorization": "garbage"}, "the bearer token is not a JWT (three base64url parts separated by dots)"),
        ({"Authorization": "Bearer e30.e30.c2ln"}, "the access token's signature does not verify with this deployment's signing keys"),
    ],
)
async def test_malformed_credentials_and_wrong_schemes_say_so(client, headers, why):
    text = await message(client, headers)
    assert text.startswith(f"Unauthorized: {why}"), text
    assert text.endswith(EXPECTED), text


async def test_api_key_sent_as_bearer_is_told_to_use_x_api_key(client, workspace):
    text = await message(client, {"Authorization": f"Bearer {workspace['api_key']}"})
    assert text == "Unauthorized: an API key was sent in `Authorization`; an API key goes in its own header; send it as `x-api-key: <key>`"


async def test_admin_key_on_a_workspace_route_is_named(make_app, aiohttp_client):
    app = make_app()
    app[SERVICES].settings.admin.api_key = "operator-secret-key"
    client = await aiohttp_client(app)
    for headers in ({"x-api-key": "operator-secret-key"}, {"Authorization": "Bearer operator-secret-key"}):
        text = await message(client, headers)
        assert text.startswith("Unauthorized: the operator's admin key opens only the operator's routes (`/accounts`)"), text


async def test_token_refusals_expired_other_issuer_id_token_and_mcp_audience(client, workspace):
    app = client.server.app
    claims = {"sub": "u1", "organization_id": workspace["workspace_id"]}
    expired = await sign_access_token(app, claims, lifetime=-10)
    text = await message(client, {"Authorization": f"Bearer {expired}"})
    assert text.startswith("Unauthorized: the access token expired at 20") and "`grant_type=refresh_token`" in text and text.endswith(EXPECTED), text
    other = await sign_access_token(app, {**claims, "iss": "https://elsewhere.example"})
    text = await message(client, {"Authorization": f"Bearer {other}"})
    assert text.startswith("Unauthorized: the access token was issued by `https://elsewhere.example`, not by this deployment's identity provider"), text
    id_token = await sign_access_token(app, {**claims, "token_type": "id_token"})
    text = await message(client, {"Authorization": f"Bearer {id_token}"})
    assert text.startswith("Unauthorized: the token is an id_token, not an access token"), text
    mcp = app[SERVICES].settings.public_base_url + "/mcp"
    for_mcp = await sign_access_token(app, {**claims, "aud": mcp})
    text = await message(client, {"Authorization": f"Bearer {for_mcp}"})
    assert text.startswith(f"Unauthorized: the access token was issued for the MCP server (audience `{mcp}`): it opens `/mcp` only, not the connect API"), text


async def test_cron_and_metrics_name_their_setting(make_app, aiohttp_client):
    app = make_app(cron_secret="cron-s3cret")
    app[SERVICES].settings.metrics.token = "metrics-s3cret"
    client = await aiohttp_client(app)
    cron = await client.get("/api/cron/token-refresh", headers={"Authorization": "Bearer wrong"})
    assert cron.status == 401
    assert (await cron.json())["message"] == (
        "Unauthorized: the bearer token is not the configured secret; send `Authorization: Bearer <secret>` with the secret of `cron_secret` (PATCHBAY_CRON_SECRET)"
    )
    metrics = await client.get("/metrics")
    assert metrics.status == 401
    assert (await metrics.json())["message"] == (
        "Unauthorized: no credential was sent; send `Authorization: Bearer <secret>` with the secret of `[metrics] token` (PATCHBAY_METRICS_TOKEN)"
    )


async def test_unset_cron_secret_is_named(client):
    response = await client.get("/api/cron/token-refresh", headers={"Authorization": "Bearer anything"})
    assert response.status == 401
    assert (await response.json())["message"].startswith("Unauthorized: `cron_secret` (PATCHBAY_CRON_SECRET) is not set, so this route is closed")


async def test_operator_routes_name_the_admin_key_setting(client, workspace):
    response = await client.get("/accounts")
    assert response.status == 401
    assert (await response.json())["message"] == (
        "Unauthorized: no credential was sent; send the operator's admin key (`[admin] api_key`, PATCHBAY_ADMIN_API_KEY) as `x-api-key: <key>` or `Authorization: Bearer <key>`"
    )
    forbidden = await client.get("/accounts", headers=workspace["headers"])
    assert forbidden.status == 403 and "`[admin] api_key`" in (await forbidden.json())["message"]


async def test_a_login_link_with_a_refused_token_says_why(client):
    response = await client.get("/auth/github/login", params={"token": "garbage"})
    assert response.status == 401
    assert (await response.json())["message"] == (
        "Unauthorized: the `token` of the link was refused: the bearer token is not a JWT (three base64url parts separated by dots); "
        f"{EXPECTED}, or a link with an access token as `token=<token>`"
    )


async def test_agent_grants_and_workspaces_say_what_they_take(client):
    grants = await client.get("/api/v1/agent-grants")
    assert grants.status == 401
    assert (await grants.json())["message"] == (
        "Unauthorized: no credential was sent and no one is signed in; send a signed-in user's browser session or access token "
        "(`Authorization: Bearer <token>`), or a workspace API key as `x-api-key: <key>`"
    )
    workspaces = await client.get("/connect/v1/workspaces", headers={"x-api-key": "pb_" + "B" * 43})
    assert workspaces.status == 401 and (await workspaces.json())["message"] == INACTIVE_KEY
