"""The connect session API over HTTP on SQLite and PostgreSQL: create (token shown once, stored as
a digest), validation, list with the end-user filter, get, revoke, tenant isolation, expiry, and
connections made through a session carrying the end user's id."""

from __future__ import annotations

from datetime import timedelta

import pytest
from aiohttp import ClientSession, CookieJar
from sqlalchemy import text, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

API_KEY = "acme-secret-key-1"


async def create(api, ws, **body):
    body.setdefault("endUser", {"id": "user-42", "email": "ada@example.com", "displayName": "Ada"})
    return await api.post("/connect/v1/connect-sessions", json=body, headers=ws["headers"])


async def test_create_answers_token_once_and_stores_its_digest(connect_api, ws):
    response = await create(connect_api, ws, allowedProviders=["acmekeys"], metadata={"plan": "gold"}, returnUrl="https://app.example.com/done")
    assert response.status == 201, await response.text()
    body = await response.json()
    assert body["token"].startswith("pbcs_") and len(body["token"]) > 40
    assert body["url"].endswith(f"/connect/ui?session={body['token']}")
    assert body["status"] == "active" and body["endUser"] == {"id": "user-42", "email": "ada@example.com", "displayName": "Ada"}
    assert body["allowedProviders"] == ["acmekeys"] and body["metadata"] == {"plan": "gold"} and body["returnUrl"] == "https://app.example.com/done"
    async with connect_api.server.app[SERVICES].db.session() as session:
        raw = (await session.execute(text("SELECT * FROM connect_sessions"))).mappings().one()
    assert body["token"] not in str(dict(raw)), "only a digest of the token is stored"

    fetched = await (await connect_api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=ws["headers"])).json()
    assert fetched["id"] == body["id"] and "token" not in fetched and "url" not in fetched


async def test_default_lifetime_comes_from_settings_and_is_bounded(aiohttp_client, make_connect_app, database_url):
    from patchbay.core.settings import ConnectUiSettings

    api = await aiohttp_client(make_connect_app(database_url=database_url, connect_ui=ConnectUiSettings(session_ttl_minutes=5, max_session_ttl_minutes=60)))
    ws = await create_workspace_with_key(api.server.app)
    body = await (await create(api, ws)).json()
    async with api.server.app[SERVICES].db.session() as session:
        row = await session.get(ConnectSession, body["id"])
    assert timedelta(minutes=4) < row.expires_at - utcnow() <= timedelta(minutes=5)
    too_long = await create(api, ws, expiresInMinutes=61)
    assert too_long.status == 400 and (await too_long.json())["message"] == "Validation failed: expiresInMinutes must be an integer from 1 to 60"


async def test_bad_input_is_refused_with_the_documented_shape(connect_api, ws):
    cases = [
        ({"endUser": None}, "endUser is required"),
        ({"endUser": {"email": "x@example.com"}}, "id must be a non-empty string"),
        ({"allowedProviders": ["nope"]}, "unknown provider(s): nope"),
        ({"allowedProviders": []}, "allowedProviders must be a non-empty list"),
        ({"allowedProviders": "acmekeys"}, "allowedProviders must be a non-empty list"),
        ({"allowedProviders": [7]}, "allowedProviders"),
        ({"endUser": "user-42"}, "endUser must be an object"),
        ({"endUser": {"id": 42}}, "endUser.id must be a string"),
        ({"returnUrl": 5}, "returnUrl must be a string"),
        ({"returnUrl": "javascript:alert(1)"}, "returnUrl must be an absolute http(s) URL"),
        ({"metadata": [1]}, "metadata must be an object"),
        ({"expiresInMinutes": 0}, "expiresInMinutes must be an integer"),
        ({"reconnectConnectionId": "missing"}, "Connection not found: missing"),
    ]
    for body, message in cases:
        response = await create(connect_api, ws, **body)
        error = await response.json()
        assert response.status in (400, 404) and set(error) == {"statusCode", "message"} and message in error["message"], (body, error)
    listed = await (await connect_api.get("/connect/v1/connect-sessions", headers=ws["headers"])).json()
    assert listed["total"] == 0, "a refused request stores nothing"
    assert (await connect_api.post("/connect/v1/connect-sessions", json={"endUser": {"id": "u"}})).status == 401


async def test_list_filters_by_end_user_and_revoke_ends_the_token(connect_api, ws):
    first = await (await create(connect_api, ws)).json()
    await create(connect_api, ws, endUser={"id": "user-7"})
    mine = await (await connect_api.get("/connect/v1/connect-sessions?endUserId=user-42", headers=ws["headers"])).json()
    assert mine["total"] == 1 and mine["data"][0]["id"] == first["id"] and "token" not in mine["data"][0]
    assert (await (await connect_api.get("/connect/v1/connect-sessions", headers=ws["headers"])).json())["total"] == 2

    page = await connect_api.get(f"/connect/ui?session={first['token']}", allow_redirects=False)
    assert page.status == 303, "the token opens the page while active"
    revoked = await connect_api.delete(f"/connect/v1/connect-sessions/{first['id']}", headers=ws["headers"])
    assert revoked.status == 200 and (await revoked.json())["status"] == "revoked"
    closed = await connect_api.get(f"/connect/ui?session={first['token']}", allow_redirects=False)
    assert closed.status == 400 and "cancelled" in await closed.text()


@pytest.mark.both_databases
async def test_sessions_are_tenant_scoped(connect_api, ws):
    body = await (await create(connect_api, ws)).json()
    other = await create_workspace_with_key(connect_api.server.app, name="Other")
    assert (await connect_api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=other["headers"])).status == 404
    assert (await connect_api.delete(f"/connect/v1/connect-sessions/{body['id']}", headers=other["headers"])).status == 404
    assert (await (await connect_api.get("/connect/v1/connect-sessions", headers=other["headers"])).json())["total"] == 0
    assert (await (await connect_api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=ws["headers"])).json())["status"] == "active"


@pytest.mark.both_databases
async def test_expired_session_no_longer_opens_the_page(connect_api, ws):
    body = await (await create(connect_api, ws)).json()
    async with connect_api.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(ConnectSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    page = await connect_api.get(f"/connect/ui?session={body['token']}", allow_redirects=False)
    assert page.status == 400 and "expired" in await page.text()
    assert (await (await connect_api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=ws["headers"])).json())["status"] == "expired"
    forged = await connect_api.get("/connect/ui?session=pbcs_forged", allow_redirects=False)
    assert forged.status == 400 and "not valid" in await forged.text()


async def test_connection_made_through_a_session_carries_the_end_user(connect_api, ws, keys, through_page):
    body = await (await create(connect_api, ws, allowedProviders=["acmekeys"], metadata={"plan": "gold"})).json()
    entered = await connect_api.get(f"/connect/ui?session={body['token']}", allow_redirects=False)
    assert entered.status == 303 and entered.headers["Location"] == "/connect/ui/providers/acmekeys"
    done = await through_page(connect_api, "", body["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})
    assert done.status == 303, await done.text()
    assert keys.calls == [("ada-co", f"Bearer {API_KEY}")], "the key was proved at the end user's subdomain"

    listed = await (await connect_api.get("/connect/v1/connections?endUserId=user-42", headers=ws["headers"])).json()
    assert listed["total"] == 1
    connection = listed["data"][0]
    assert connection["endUserId"] == "user-42" and connection["params"]["subdomain"] == "ada-co" and connection["metadata"] == {"plan": "gold"}
    assert (await (await connect_api.get("/connect/v1/connections?endUserId=someone-else", headers=ws["headers"])).json())["total"] == 0
    session_now = await (await connect_api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=ws["headers"])).json()
    assert session_now["status"] == "used" and session_now["connectionId"] == connection["connectionId"]
    again = await connect_api.get(f"/connect/ui?session={body['token']}", allow_redirects=False)
    assert again.status == 400 and "already used" in await again.text(), "a session makes one connection"


def test_connect_ui_settings_come_from_the_environment_and_the_file(tmp_path):
    from patchbay.core.settings import SettingsError, load_settings

    config = tmp_path / "patchbay.toml"
    config.write_text("[connect_ui]\nsession_ttl_minutes = 12\n")
    settings = load_settings({}, {"PATCHBAY_CONFIG": str(config), "PATCHBAY_CONNECT_UI_MAX_SESSION_TTL_MINUTES": "90"})
    assert settings.connect_ui.session_ttl_minutes == 12 and settings.connect_ui.max_session_ttl_minutes == 90
    config.write_text("[connect_ui]\nttl = 1\n")
    with pytest.raises(SettingsError, match="ttl"):
        load_settings({}, {"PATCHBAY_CONFIG": str(config)})


async def test_an_approved_connect_carries_the_end_user(connect_api, ws, through_page):
    base = str(connect_api.server.make_url("")).rstrip("/")
    assert (await connect_api.patch("/connect/v1/approvals/policy", json={"enabled": True, "categories": ["crm"]}, headers=ws["headers"])).status == 200
    session = await (
        await connect_api.post("/connect/v1/connect-sessions", json={"endUser": {"id": "user-9"}, "allowedProviders": ["acmekeys"]}, headers=ws["headers"])
    ).json()
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        held = await through_page(browser, base, session["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})
        assert held.status == 303
    pending = await (await connect_api.get("/connect/v1/approvals/pending", headers=ws["headers"])).json()
    [request] = pending["data"]
    approved = await connect_api.post(f"/connect/v1/approvals/{request['id']}/approve", headers=ws["headers"])
    assert approved.status == 201, await approved.text()
    listed = await (await connect_api.get("/connect/v1/connections?endUserId=user-9", headers=ws["headers"])).json()
    assert [row["connectionId"] for row in listed["data"]] == [(await approved.json())["connectionId"]]


async def test_a_plan_limit_is_shown_on_the_form_and_leaves_the_link_usable(aiohttp_client, make_connect_app, database_url, keys, through_page):
    """The plan's provider cap (a domain error of the billing service) is the form's error, not a
    bare 403, and the session stays usable for a retry once the cap is lifted."""
    api = await aiohttp_client(make_connect_app(database_url=database_url, plans={"free": {"providers": 0}}))
    ws = await create_workspace_with_key(api.server.app, plan="free")
    body = await (await create(api, ws, allowedProviders=["acmekeys"])).json()
    refused = await through_page(api, "", body["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})
    assert refused.status == 400, await refused.text()
    assert "Plan limit exceeded for providers" in await refused.text()
    assert (await (await api.get("/connect/v1/connections", headers=ws["headers"])).json())["total"] == 0
    session_now = await (await api.get(f"/connect/v1/connect-sessions/{body['id']}", headers=ws["headers"])).json()
    assert session_now["status"] != "used"
