"""Attacks on how requests come in: bodies, parsing, rate limits, plan caps, templates (issue 12)."""

from __future__ import annotations

import asyncio
import gzip
import secrets

import pytest

from patchbay.core.settings import RATE_LIMIT_DEFAULTS
from patchbay.core.tables import csvstream
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection

OIDC_FORM_ROUTES = [
    "/api/v1/oidc/token",
    "/api/v1/oidc/introspect",
    "/api/v1/oidc/revoke",
    "/api/v1/oidc/authorize",
    "/api/v1/oidc/login",
    "/api/v1/oidc/consent",
    "/api/v1/oidc/end-session",
]
BAD_FORM_CONTENT_TYPES = [
    "multipart/form-data",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded; charset=no-such-codec",
]
DEEP_JSON = b'{"a": ' + b"[" * 2000 + b"]" * 2000 + b"}"


@pytest.mark.parametrize("content_type", BAD_FORM_CONTENT_TYPES)
@pytest.mark.parametrize("path", OIDC_FORM_ROUTES)
async def test_malformed_form_on_oauth_route_is_invalid_request(client, path, content_type):
    response = await client.post(path, data=b"a=b", headers={"Content-Type": content_type})
    assert response.status == 400
    body = await response.json()
    assert body["error"] == "invalid_request"
    assert "form" in body["error_description"].lower()


@pytest.mark.parametrize("content_type", BAD_FORM_CONTENT_TYPES)
async def test_malformed_form_on_data_deletion_is_400(client, content_type):
    response = await client.post("/compliance/data-deletion", data=b"a=b", headers={"Content-Type": content_type})
    assert response.status == 400
    body = await response.json()
    assert body["statusCode"] == 400
    assert "form" in body["message"].lower()


@pytest.mark.parametrize(
    "path",
    ["/connect/v1/flows", "/connect/v1/tables", "/api/execute", "/connect/v1/providers/hubspot/actions/create_contact"],
)
async def test_deeply_nested_json_is_400_naming_the_problem(client, workspace, path):
    response = await client.post(path, data=DEEP_JSON, headers={**workspace["headers"], "Content-Type": "application/json"})
    assert response.status == 400
    body = await response.json()
    message = body.get("message") or body.get("error_description")
    assert "nested" in message.lower()


async def test_deeply_nested_json_on_oidc_registration_is_invalid_request(client):
    response = await client.post("/api/v1/oidc/register", data=DEEP_JSON, headers={"Content-Type": "application/json"})
    assert response.status == 400
    body = await response.json()
    assert "nested" in (body.get("error_description") or "").lower()


async def test_deeply_nested_json_on_data_deletion_is_400(client):
    response = await client.post("/compliance/data-deletion", data=DEEP_JSON, headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert "nested" in (await response.json())["message"].lower()


# --- body limits -------------------------------------------------------------------------------


async def _chunked(data: bytes, size: int = 64 * 1024):
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.fixture
async def small_limits(aiohttp_client, make_app):
    """An app with a 4 KB limit for unauthenticated callers and 64 KB for authenticated ones."""
    client = await aiohttp_client(make_app(max_unauthenticated_body_bytes=4096, max_body_bytes=65536))
    client.ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    return client


@pytest.mark.parametrize("chunked", [False, True])
async def test_webhook_receiver_refuses_a_large_unsigned_body_before_reading_it(small_limits, chunked):
    payload = b'{"pad": "' + b"x" * 20_000 + b'"}'
    data = _chunked(payload) if chunked else payload
    response = await small_limits.post("/webhook/stripe", data=data, headers={"Content-Type": "application/json"})
    assert response.status == 413
    assert (await response.json())["statusCode"] == 413


@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/webhook/stripe", "application/json", b'{"pad": "' + b"x" * 20_000 + b'"}'),
        ("/api/v1/oidc/token", "application/x-www-form-urlencoded", b"grant_type=" + b"x" * 20_000),
    ],
)
async def test_a_small_compressed_body_that_inflates_past_the_unauthenticated_limit_is_413(small_limits, path, content_type, body):
    packed = gzip.compress(body)
    assert len(packed) < 4096 < len(body)  # declared small, inflated over the limit
    response = await small_limits.post(path, data=packed, headers={"Content-Type": content_type, "Content-Encoding": "gzip"})
    assert response.status == 413


async def test_oidc_token_endpoint_refuses_a_large_form(small_limits):
    response = await small_limits.post("/api/v1/oidc/token", data=b"grant_type=" + b"x" * 20_000, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status == 413
    assert (await response.json())["error"] == "invalid_request"


async def test_invalid_api_key_gets_the_unauthenticated_limit(small_limits):
    response = await small_limits.post(
        "/connect/v1/flows", data=b"{}" + b" " * 20_000, headers={"x-api-key": "pk_not_a_key", "Content-Type": "application/json"}
    )
    assert response.status == 413


async def test_authenticated_caller_may_send_more_than_the_unauthenticated_limit(small_limits):
    body = b'{"name": "Big", "steps": []' + b" " * 20_000 + b"}"
    response = await small_limits.post("/connect/v1/flows", data=body, headers={**small_limits.ws["headers"], "Content-Type": "application/json"})
    assert response.status != 413
    assert response.status < 500


@pytest.mark.parametrize("chunked", [False, True])
async def test_authenticated_body_over_its_limit_is_413(small_limits, chunked):
    payload = b'{"pad": "' + b"x" * 100_000 + b'"}'
    data = _chunked(payload) if chunked else payload
    response = await small_limits.post("/connect/v1/flows", data=data, headers={**small_limits.ws["headers"], "Content-Type": "application/json"})
    assert response.status == 413


async def _table(client):
    response = await client.post(
        "/connect/v1/tables", json={"name": "People", "slug": "people", "columns": [{"name": "name", "type": "text"}]}, headers=client.ws["headers"]
    )
    assert response.status == 201, await response.text()


async def test_streamed_csv_import_over_the_limit_is_413(small_limits):
    await _table(small_limits)
    rows = b"name\n" + b"".join(b"person %d\n" % n for n in range(20_000))
    response = await small_limits.post(
        "/connect/v1/tables/people/import", data=_chunked(rows), headers={**small_limits.ws["headers"], "Content-Type": "text/csv"}
    )
    assert response.status == 413
    rows_now = await small_limits.get("/connect/v1/tables/people/rows", headers=small_limits.ws["headers"])
    assert (await rows_now.json())["total"] == 0


async def test_csv_with_an_unbalanced_quote_is_refused_not_held(small_limits, monkeypatch):
    monkeypatch.setattr(csvstream, "MAX_RECORD_CHARS", 10_000)
    await _table(small_limits)
    rows = b'name\n"unterminated\n' + b"".join(b"person %d\n" % n for n in range(5_000))
    response = await small_limits.post(
        "/connect/v1/tables/people/import", data=_chunked(rows, 1024), headers={**small_limits.ws["headers"], "Content-Type": "text/csv"}
    )
    assert response.status == 400
    message = (await response.json())["message"]
    assert "line 2" in message and "unbalanced quote" in message


# --- rate limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "limit", "form"),
    [
        ("/api/v1/oidc/token", "oidc_token", {"grant_type": "client_credentials"}),
        ("/api/v1/oidc/introspect", "oidc_introspect", {"token": "x"}),
        ("/api/v1/oidc/revoke", "oidc_revoke", {"token": "x"}),
    ],
)
async def test_random_client_ids_do_not_reset_the_limit(aiohttp_client, make_app, path, limit, form):
    client = await aiohttp_client(make_app(rate_limits={**RATE_LIMIT_DEFAULTS, limit: "3/minute"}))
    statuses = []
    for _ in range(6):
        attempt = {**form, "client_id": secrets.token_hex(8), "client_secret": "guess"}
        statuses.append((await client.post(path, data=attempt)).status)
    assert 429 not in statuses[:3]
    assert statuses[3:] == [429, 429, 429]


async def test_an_authenticated_client_has_its_own_token_limit(aiohttp_client, make_app):
    """Once its secret checks out, a client counts against its own limit, not its address's."""
    app = make_app(rate_limits={**RATE_LIMIT_DEFAULTS, "oidc_token": "2/minute"})
    client = await aiohttp_client(app)
    registered = await client.post(
        "/api/v1/oidc/register",
        json={
            "client_name": "svc",
            "grant_types": ["client_credentials"],
            "token_endpoint_auth_method": "client_secret_post",
            "redirect_uris": ["https://svc.example/cb"],
        },
    )
    assert registered.status == 201, await registered.text()
    credentials = await registered.json()
    for _ in range(2):  # the address's budget, spent by strangers
        await client.post("/api/v1/oidc/token", data={"grant_type": "client_credentials", "client_id": secrets.token_hex(8), "client_secret": "x"})
    form = {"grant_type": "client_credentials", "client_id": credentials["client_id"], "client_secret": credentials["client_secret"]}
    response = await client.post("/api/v1/oidc/token", data=form)
    assert response.status != 429, await response.text()


# --- plan caps ---------------------------------------------------------------------------------


@pytest.mark.both_databases
async def test_concurrent_template_clones_stop_at_the_monthly_cap(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url))
    ws = await create_workspace_with_key(client.server.app)  # free plan: 3 clones a month
    facebook = await add_connection(client.server.app, ws["workspace_id"], "facebook", meta={"page_id": "p1"})
    await add_connection(client.server.app, ws["workspace_id"], "hubspot")
    url = "/connect/v1/flow-templates/meta-lead-to-hubspot-contact/clone"

    async def clone():
        response = await client.post(url, json={"triggerConnectionId": facebook}, headers=ws["headers"])
        return response.status, await response.json()

    outcomes = await asyncio.gather(*(clone() for _ in range(20)))
    statuses = sorted(status for status, _ in outcomes)
    assert statuses == [201] * 3 + [403] * 17
    assert all(body["message"].startswith("Plan limit exceeded for template_clones:") for status, body in outcomes if status == 403)
    flows = await client.get("/connect/v1/flows", headers=ws["headers"])
    assert (await flows.json())["total"] == 3


# --- flow templates ----------------------------------------------------------------------------


async def _test_run(client, ws, steps, payload=None):
    created = await client.post("/connect/v1/flows", json={"name": "heavy", "steps": steps}, headers=ws["headers"])
    assert created.status == 201, await created.text()
    response = await client.post(f"/connect/v1/flows/{(await created.json())['id']}/test", json=payload or {}, headers=ws["headers"])
    assert response.status == 201, await response.text()
    return await response.json()


async def test_a_huge_template_value_fails_its_step(client, workspace):
    execution = await _test_run(client, workspace, [{"id": "boom", "type": "transform", "output": "{{ 'x' * 10**10 }}"}])
    assert execution["status"] == "failed"
    assert "longer than" in execution["steps"][0]["error"]


async def test_a_slow_template_fails_within_the_step_timeout_without_blocking_the_server(client, workspace):
    slow = "{% for i in range(1000) %}{{ trigger.big|join(',')|length }}{% endfor %}"  # few operations, each long (a joined value under the length bound, so the deadline is what stops it)
    step = {"id": "slow", "type": "transform", "output": slow, "timeoutSeconds": 0.2}
    run = asyncio.create_task(_test_run(client, workspace, [step], {"big": list(range(100_000))}))
    health = await client.get("/health")
    assert health.status == 200
    assert not run.done()  # the server answered while the template was still rendering
    execution = await run
    assert execution["status"] == "failed"
    assert "timed out" in execution["steps"][0]["error"] or "timeout" in execution["steps"][0]["error"]


@pytest.mark.parametrize("credential", [{"Authorization": "Bearer not.a.jwt"}, {"Authorization": "Basic !!!"}, {"x-api-key": "\u00e9" * 10}])
async def test_a_bad_credential_on_a_webhook_receiver_is_not_a_server_error(client, credential):
    response = await client.post("/webhook/stripe", data=b'{"id": "evt_1"}', headers={**credential, "Content-Type": "application/json"})
    assert response.status < 500
