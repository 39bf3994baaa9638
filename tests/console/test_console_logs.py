"""The Logs page over HTTP: one timeline of proxy calls, token refreshes, tool calls, inbound
events, deliveries and executions; its filters, search by id and keyset pages; the detail pane
(secrets redacted, bodies cut); the live tail's JSON; the fix actions (redeliver a failed
delivery to a local receiver, replay an inbound event, retry an execution) through the API's
services; and the attacks (another workspace's ids, a viewer's POST, a POST without its CSRF token)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import pytest
from aiohttp import ClientSession
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.console import logs
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep
from patchbay.core.settings import WebhooksSettings
from patchbay.core.timeline import Key
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookDelivery
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import Receiver, add_connection
from tests.console.conftest import api_key_headers, console_get, console_post

APP_SECRET = "meta-app-secret"
PAYLOAD_SECRET = "payload-token-9d8e7f6a5b"


@pytest.fixture
def console_settings():
    """Workers running (deliveries are jobs), Meta's webhook secret, retries in milliseconds."""
    return {
        "background": True,
        "providers": {"facebook": {"webhook_secret": APP_SECRET, "webhook_verify_token": "verify-me"}},
        "webhooks": WebhooksSettings(retry_base_ms=20, retry_cap_ms=60, long_tail_schedule=[]),
    }


@pytest.fixture
async def receiver():
    server = await Receiver([500]).start()
    yield server
    await server.close()


async def wait_until(predicate, timeout: float = 20.0):
    """Poll ``predicate`` until it answers something true (bounded)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def subscribed(server, workspace_id: str, receiver: Receiver) -> dict[str, str]:
    """A facebook connection (page-A) and a subscription of ``receiver`` to its events."""
    await add_connection(server.app, workspace_id, "facebook", meta={"page_id": "page-A"})
    headers = await api_key_headers(server, workspace_id)
    async with ClientSession(base_url=server.base, headers=headers) as api:
        body = {"callbackUrl": receiver.url + "/hook", "eventType": "*", "callbackSecret": "customer-callback-secret"}
        async with api.post("/connect/v1/webhooks/facebook/subscribe", json=body) as response:
            assert response.status == 201, await response.text()
    return headers


async def send_event(server, **value) -> str:
    body = json.dumps(page_event_payload("page-A", value=value)).encode()
    async with (
        ClientSession() as http,
        http.post(f"{server.base}/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)}) as response,
    ):
        assert response.status == 200, await response.text()
        return (await response.json())["id"]


async def delivery_rows(server, event_id: str) -> list[WebhookDelivery]:
    async with server.app[SERVICES].db.session() as session:
        return list(await session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event_id).order_by(WebhookDelivery.created_at)))


async def failed_delivery(server, event_id: str) -> WebhookDelivery:
    async def failed():
        rows = await delivery_rows(server, event_id)
        return rows[0] if rows and rows[0].status == "failed" else None

    return await wait_until(failed)


async def failed_execution(server, workspace_id: str, *, name: str = "Sync leads") -> FlowExecution:
    """A flow and one failed execution of it, whose trigger payload and failing step hold a secret."""
    services = server.app[SERVICES]
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = Flow(workspace_id=workspace_id, name=name, steps=[{"id": "push", "type": "http", "config": {"url": "http://127.0.0.1:9/x"}}])
        session.add(flow)
        await session.flush()
        execution = FlowExecution(
            workspace_id=workspace_id,
            flow_id=flow.id,
            steps=flow.steps,
            status="failed",
            trigger_source="test",
            trigger_payload={"lead": {"email": "ada@example.com"}, "access_token": PAYLOAD_SECRET},
            error="step push failed: connection refused",
            started_at=utcnow(),
            finished_at=utcnow(),
            duration_ms=12,
        )
        session.add(execution)
        await session.flush()
        session.add(
            FlowExecutionStep(
                workspace_id=workspace_id,
                execution_id=execution.id,
                position=0,
                step_id="push",
                type="http",
                status="failed",
                input={"url": "http://127.0.0.1:9/x", "headers": {"Authorization": f"Bearer {PAYLOAD_SECRET}"}},
                error="connection refused",
            )
        )
    return execution


def entry_links(page: str, kind: str | None = None) -> list[str]:
    return re.findall(r'href="/console/w/[^/]+/logs/(' + (kind or "[a-z]+") + r'/[0-9a-f-]{36})"', page)


# -- the fix actions -------------------------------------------------------------------------------


async def test_a_failed_delivery_is_found_and_redelivered_to_the_local_receiver(console_server, make_person, sign_in, receiver):
    person = await make_person("manager")
    await subscribed(console_server, person.workspace_id, receiver)
    event_id = await send_event(console_server, note="hello", access_token=PAYLOAD_SECRET)
    delivery = await failed_delivery(console_server, event_id)
    assert len(receiver.requests) == 4, "the first attempt and three retries, all answered 500"
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/logs"
    status, page = await console_get(http, f"{base}?kind=delivery&status=failed")
    assert status == 200 and entry_links(page) == [f"delivery/{delivery.id}"]
    status, page = await console_get(http, f"{base}/delivery/{delivery.id}")
    assert status == 200 and page.count("status-failed") >= 4 and "answer 1" in page and receiver.url in page
    assert PAYLOAD_SECRET not in page and "[redacted]" in page, "the body's token is redacted"
    receiver.statuses = [200]
    status, _, location = await console_post(http, f"{base}/delivery/{delivery.id}/redeliver", token_from=f"{base}/delivery/{delivery.id}")
    assert status == 303 and location.startswith(f"{base}/delivery/")
    await receiver.wait_for(5)
    assert receiver.requests[4]["body"] == receiver.requests[0]["body"] and receiver.requests[4]["headers"]["X-Connect-Delivery"] == event_id

    async def succeeded():
        rows = await delivery_rows(console_server, event_id)
        return len(rows) == 2 and rows[1].status == "succeeded" and rows[1]

    again = await wait_until(succeeded)
    assert location.endswith(again.id) and again.manual
    status, page = await console_get(http, location)
    assert status == 200 and "status-ok" in page and "(manual)" in page


async def test_an_inbound_event_is_replayed(console_server, make_person, sign_in, receiver):
    receiver.statuses = [200]
    person = await make_person("manager")
    await subscribed(console_server, person.workspace_id, receiver)
    event_id = await send_event(console_server, note="replay me")
    await receiver.wait_for(1)
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/logs"
    status, page = await console_get(http, f"{base}?kind=inbound")
    assert status == 200 and entry_links(page) == [f"inbound/{event_id}"]
    status, page = await console_get(http, f"{base}/inbound/{event_id}")
    assert status == 200 and "replay me" in page and "Replay to its subscriptions" in page and "PROCESSED" in page
    status, _, location = await console_post(http, f"{base}/inbound/{event_id}/replay", token_from=f"{base}/inbound/{event_id}")
    assert status == 303 and location == f"{base}/inbound/{event_id}"
    await receiver.wait_for(2)
    assert receiver.requests[1]["body"] == receiver.requests[0]["body"]
    assert [d.manual for d in await delivery_rows(console_server, event_id)] == [False, True]


async def test_a_failed_execution_is_shown_redacted_and_retried(console_server, make_person, sign_in):
    person = await make_person("manager")
    execution = await failed_execution(console_server, person.workspace_id)
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/logs"
    status, page = await console_get(http, f"{base}?kind=execution&status=failed")
    assert status == 200 and entry_links(page) == [f"execution/{execution.id}"] and "Sync leads" in page
    status, page = await console_get(http, f"{base}/execution/{execution.id}")
    assert status == 200 and "connection refused" in page and "ada@example.com" in page
    assert PAYLOAD_SECRET not in page and page.count("[redacted]") >= 2
    status, _, location = await console_post(http, f"{base}/execution/{execution.id}/retry", token_from=f"{base}/execution/{execution.id}")
    assert status == 303
    async with console_server.app[SERVICES].db.session() as session:
        retried = await session.scalar(select(FlowExecution).where(FlowExecution.replay_of == execution.id))
    assert retried is not None and location.endswith(retried.id) and retried.trigger_payload == execution.trigger_payload


# -- the timeline ---------------------------------------------------------------------------------


async def test_the_timeline_merges_kinds_pages_by_keyset_and_filters(console_server, make_person, sign_in):
    person = await make_person("viewer")
    services = console_server.app[SERVICES]
    connection_id = await add_connection(console_server.app, person.workspace_id, "facebook", meta={"page_id": "page-B"})
    for i in range(40):
        services.connections.audit.add(
            workspace_id=person.workspace_id,
            connection_id=connection_id,
            provider="facebook",
            source="proxy",
            method="GET",
            path=f"/v1/item/{i}",
            status=200 if i % 4 else 502,
            duration_ms=3,
        )
    services.connections.audit.add(
        workspace_id=person.workspace_id,
        connection_id=connection_id,
        provider="facebook",
        source="refresh",
        method="POST",
        path="/oauth/token",
        status=200,
        duration_ms=9,
    )
    services.connections.audit.add(
        workspace_id=person.workspace_id,
        connection_id=connection_id,
        provider="facebook",
        source="mcp",
        method="POST",
        path="/tools/list_leads",
        status=200,
        duration_ms=9,
    )
    executions = [await failed_execution(console_server, person.workspace_id, name=f"Flow {i}") for i in range(12)]
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/logs"
    status, first = await console_get(http, base)
    assert status == 200 and len(entry_links(first)) == 50
    next_url = re.search(r'href="([^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    assert "cursor=" in next_url
    status, second = await console_get(http, next_url)
    assert status == 200 and len(entry_links(second)) == 4 and 'rel="next"' not in second
    seen = entry_links(first) + entry_links(second)
    assert len(set(seen)) == 54 and {link.split("/")[0] for link in seen} == {"proxy", "refresh", "tool", "execution"}
    when = re.findall(r'/logs/[a-z]+/[0-9a-f-]{36}">([^<]+)<', first + second)
    assert when == sorted(when, reverse=True), "newest first across kinds and pages"
    checks = {
        "kind=refresh": 1,
        "kind=tool": 1,
        "kind=proxy": 40,
        "kind=proxy&status=failed": 10,
        "status=failed": 22,
        "kind=execution": 12,
        f"connection={connection_id}": 42,
        f"q={executions[3].id}": 1,
        f"q={executions[3].flow_id}": 1,
        "q=no-such-id": 0,
        "provider=facebook&kind=execution": 0,
        "since=2999-01-01T00:00": 0,
        f"until={(utcnow() - timedelta(days=1)).strftime('%Y-%m-%dT%H:%M')}": 0,
    }
    for query, count in checks.items():
        status, page = await console_get(http, f"{base}?{query}")
        assert status == 200 and len(entry_links(page)) == count, (query, len(entry_links(page)))
    for bad in ("kind=nope", "status=weird", "since=yesterday", "cursor=%%%"):
        status, page = await console_get(http, f"{base}?{bad}")
        assert status == 400, bad


async def test_the_tail_answers_what_came_after_the_newest_key(console_server, make_person, sign_in):
    person = await make_person("viewer")
    services = console_server.app[SERVICES]
    connection_id = await add_connection(console_server.app, person.workspace_id, "facebook", meta={"page_id": "page-C"})
    services.connections.audit.add(
        workspace_id=person.workspace_id,
        connection_id=connection_id,
        provider="facebook",
        source="proxy",
        method="GET",
        path="/first",
        status=200,
        duration_ms=1,
    )
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/logs"
    status, page = await console_get(http, base)
    newest = re.search(r'data-newest="([^"]*)"', page).group(1)
    assert Key.decode(newest).id
    async with http.get(f"{http.base}{base}/tail.json", params={"after": newest}) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("application/json")
        body = await response.json()
    assert body == {"entries": [], "key": newest}
    services.connections.audit.add(
        workspace_id=person.workspace_id,
        connection_id=connection_id,
        provider="facebook",
        source="proxy",
        method="GET",
        path="/second",
        status=404,
        duration_ms=1,
    )
    await failed_execution(console_server, person.workspace_id)
    async with http.get(f"{http.base}{base}/tail.json", params={"after": newest}) as response:
        body = await response.json()
    assert [(e["kind"], e["status"]) for e in body["entries"]] == [("proxy", "failed"), ("execution", "failed")]
    assert body["entries"][0]["summary"] == "GET /second" and body["key"] == body["entries"][-1]["key"]
    async with http.get(f"{http.base}{base}/tail.json", params={"after": newest, "kind": "execution"}) as response:
        assert [e["kind"] for e in (await response.json())["entries"]] == ["execution"]


# -- attacks --------------------------------------------------------------------------------------


async def test_attacks_another_workspaces_ids_a_viewers_post_a_form_without_csrf(console_server, make_person, sign_in, receiver):
    receiver.statuses = [200]
    mine = await make_person("manager")
    theirs = await make_person("admin")
    await subscribed(console_server, theirs.workspace_id, receiver)
    event_id = await send_event(console_server, note="theirs")
    await receiver.wait_for(1)
    (delivery,) = await delivery_rows(console_server, event_id)
    execution = await failed_execution(console_server, theirs.workspace_id)
    services = console_server.app[SERVICES]
    their_connection = await add_connection(console_server.app, theirs.workspace_id, "facebook", meta={"page_id": "page-Z"})
    services.connections.audit.add(
        workspace_id=theirs.workspace_id,
        connection_id=their_connection,
        provider="facebook",
        source="proxy",
        method="GET",
        path="/theirs",
        status=200,
        duration_ms=1,
    )
    await services.connections.audit.flush()
    async with ClientSession(base_url=console_server.base, headers=await api_key_headers(console_server, theirs.workspace_id)) as api:
        async with api.get(f"/connect/v1/connections/{their_connection}/audit") as response:
            audit_id = (await response.json())["data"][0]["id"]
    http = await sign_in(mine)
    base = f"/console/w/{mine.workspace_id}/logs"
    for path in (f"inbound/{event_id}", f"delivery/{delivery.id}", f"execution/{execution.id}", f"proxy/{audit_id}", f"refresh/{audit_id}", f"nope/{audit_id}"):
        status, _ = await console_get(http, f"{base}/{path}")
        assert status == 404, path
    for query in (f"q={event_id}", f"q={delivery.id}", f"q={execution.id}", f"connection={their_connection}", ""):
        status, page = await console_get(http, f"{base}?{query}")
        assert status == 200 and entry_links(page) == [], query
    for path in (f"inbound/{event_id}/replay", f"delivery/{delivery.id}/redeliver", f"execution/{execution.id}/retry"):
        status, _, _ = await console_post(http, f"{base}/{path}", token_from=base)
        assert status == 404, path
    # in my own workspace: a viewer's POST, and a POST without its token
    own = await failed_execution(console_server, mine.workspace_id)
    viewer = await make_person("viewer", mine.workspace_id)
    watcher = await sign_in(viewer)
    status, page = await console_get(watcher, f"{base}/execution/{own.id}")
    assert status == 200 and "Retry" not in page
    status, _, _ = await console_post(watcher, f"{base}/execution/{own.id}/retry", token_from=base)
    assert status == 403
    for form in ({}, {"csrf": "forged"}):
        status, _, _ = await console_post(http, f"{base}/execution/{own.id}/retry", form)
        assert status == 403
    assert len(receiver.requests) == 1
    async with services.db.session() as session:
        assert await session.scalar(select(FlowExecution).where(FlowExecution.replay_of.in_([own.id, execution.id]))) is None


# -- redaction ------------------------------------------------------------------------------------


def test_bodies_are_redacted_and_cut():
    body = {
        "Authorization": "Bearer abcdefghijkl",
        "headers": {"cookie": "sid=1", "X-Api-Key": "k-123", "Set-Cookie": "a=b", "content-type": "application/json"},
        "data": {"access_token": "t1", "refresh_token": "t2", "apiKey": "k2", "client_secret": "s", "password": "p", "email": "ada@example.com"},
        "note": "called with token abcdefghijklmnop and ?api_key=zzz999",
    }
    shown = logs.shown(json.dumps(body))
    for secret in ("abcdefghijkl", "sid=1", "k-123", "a=b", "t1", "t2", "k2", "zzz999", '"s"', '"p"'):
        assert secret not in shown, secret
    assert "ada@example.com" in shown and "application/json" in shown and shown.count("[redacted]") >= 10
    assert logs.shown(b"plain Bearer 0123456789abcdef text") == "plain Bearer [redacted] text"
    long = logs.shown({"text": "x" * 10_000})
    assert len(long) < logs.BODY_LIMIT + 100 and "cut:" in long and long.startswith("{")
    assert logs.shown(None) is None


# -- the merged keyset on both databases -----------------------------------------------------------


@pytest.mark.both_databases
async def test_the_merged_keyset_walks_every_entry_once_in_order_on_both_databases(aiohttp_client, make_app, database_url):
    """Rows of three tables, many sharing a moment: pages of 7 walk all of them once, newest
    first with ties broken by id; the tail after a key answers exactly the newer ones, oldest first."""
    from patchbay.core.connections.models import ProxyCallLog
    from patchbay.core.testing import create_workspace_with_key
    from patchbay.core.timeline import Query
    from patchbay.core.webhooks.models import WebhookEvent

    client = await aiohttp_client(make_app(database_url=database_url))
    services = client.server.app[SERVICES]
    workspace_id = (await create_workspace_with_key(services, plan="enterprise"))["workspace_id"]
    other = (await create_workspace_with_key(services, plan="enterprise"))["workspace_id"]
    base = utcnow().replace(microsecond=0)
    moments = [base - timedelta(seconds=n // 3) for n in range(30)]  # three rows per moment
    async with services.db.transaction() as session:
        flow = Flow(workspace_id=workspace_id, name="F", steps=[])
        session.add(flow)
        await session.flush()
        for n, moment in enumerate(moments):
            for target in (workspace_id, other):
                kind = n % 3
                if kind == 0:
                    session.add(
                        ProxyCallLog(
                            workspace_id=target,
                            connection_id="c",
                            provider="p",
                            source="proxy",
                            method="GET",
                            path=f"/{n}",
                            status=200,
                            duration_ms=1,
                            created_at=moment,
                        )
                    )
                elif kind == 1:
                    session.add(WebhookEvent(workspace_id=target, provider="p", status="PROCESSED", event_type=f"e{n}", created_at=moment))
                elif target == workspace_id:
                    session.add(FlowExecution(workspace_id=target, flow_id=flow.id, status="completed", trigger_source="test", created_at=moment))
    walked, key = [], None
    while True:
        entries, key = await logs.timeline(services, Query(workspace_id=workspace_id, before=key, limit=7))
        walked += entries
        if key is None:
            break
    assert len(walked) == 30 and len({e.id for e in walked}) == 30
    assert [(e.at, e.id) for e in walked] == sorted(((e.at, e.id) for e in walked), reverse=True)
    assert {e.kind for e in walked} == {"proxy", "inbound", "execution"}
    middle = walked[12]
    tail, _ = await logs.timeline(services, Query(workspace_id=workspace_id, after=middle.key, limit=100))
    assert [e.id for e in tail] == [e.id for e in reversed(walked[:12])]
