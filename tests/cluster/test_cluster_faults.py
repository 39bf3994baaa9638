"""Several hosts under load while processes are killed: two ``patchbay serve`` hosts and one
``patchbay worker`` host on one PostgreSQL and one Redis, signed inbound events and proxy calls (to
a local upstream standing in for the Graph API, and to a local OAuth provider that rotates refresh
tokens) sent to both servers, every event starting a flow with an HTTP side effect, and a
``kill -9`` of a random process every few seconds, restarted at once.

Checked afterwards: every event answered 200 was processed once and forwarded to the subscriber
under exactly one delivery id, one delivery row per event and subscription, no job is left
running past its lease, one completed flow execution per stored event whose repeated side effects
carry one ``Idempotency-Key``, no refresh token presented twice (one refresh per expiry), and the
workspace's connect-API rate limit held across both servers and their restarts (counters in
Redis): the answers that passed it, in every window, stay within it. The short default runs in the
suite; ``PATCHBAY_CLUSTER_SECONDS=60`` is the long mode whose figures docs/scaling.md quotes.
Figures are printed (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from aiohttp import web

PATCHBAY = str(Path(sys.executable).with_name("patchbay"))
FORWARDER = str(Path(__file__).with_name("forward.py"))
APP_SECRET = "cluster-app-secret"
PAGE_ID = "cluster-page"
LOAD_SECONDS = float(os.environ.get("PATCHBAY_CLUSTER_SECONDS", "12"))
SENDERS = 8
PROXY_SENDERS = 3  # to the Graph API stand-in, plus one to the token provider
#: the workspace's connect-API limit, low enough that the proxy senders run into it
API_LIMIT = 100
#: lifetime of the token provider's access tokens: several expiries fall within the load
TOKEN_SECONDS = 4
KILL_EVERY = (1.5, 3.0)

pytestmark = pytest.mark.timeout(600)


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


class Subscriber:
    """The customer's endpoint: counts every forwarded request by its delivery id."""

    def __init__(self) -> None:
        self.receipts: Counter[str] = Counter()
        self.first_seen: dict[str, float] = {}

    async def handle(self, request: web.Request) -> web.Response:
        delivery = request.headers["X-Connect-Delivery"]
        await request.read()
        self.receipts[delivery] += 1
        self.first_seen.setdefault(delivery, time.monotonic())
        return web.json_response({"ok": True})


def _signed(n: int) -> tuple[bytes, dict[str, str]]:
    payload = {"object": "page", "entry": [{"id": PAGE_ID, "time": 1_700_000_000, "changes": [{"field": "feed", "value": {"page_id": PAGE_ID, "n": n}}]}]}
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(APP_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"x-hub-signature-256": signature, "content-type": "application/json"}


def redis_is_up() -> bool:
    """Whether the machine's Redis answers (CI machines may have none: the counters then live in
    PostgreSQL, shared as well, and the figures say so)."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2) as probe:
            probe.sendall(b"PING\r\n")
            return probe.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_forwarder(argv: list[str]) -> subprocess.Popen:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "forwarding"
    return process


def _cli(environ: dict[str, str], *args: str) -> dict:
    result = subprocess.run([PATCHBAY, *args, "--json"], env=environ, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


class Effects:
    """The side effect of the flow each event starts: one POST per execution, counted by the
    event's ``n``, with the ``Idempotency-Key`` each carried (a step re-run after its worker was
    killed repeats the POST under the same key, so a receiver can drop the repeat)."""

    def __init__(self) -> None:
        self.by_n: Counter[int] = Counter()
        self.keys: dict[int, set[str | None]] = {}

    async def handle(self, request: web.Request) -> web.Response:
        n = _find_n(await request.json())
        self.by_n[n] += 1
        self.keys.setdefault(n, set()).add(request.headers.get("Idempotency-Key"))
        return web.json_response({"ok": True})


def _find_n(value):
    if isinstance(value, dict):
        if "n" in value and isinstance(value["n"], int):
            return value["n"]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = _find_n(item)
            if found is not None:
                return found
    return None


class TokenProvider:
    """An OAuth provider (it stands in for Box) that rotates refresh tokens: each refresh token
    works once, answering a new pair whose access token expires after ``TOKEN_SECONDS``. A refresh
    with a spent token is ``invalid_grant``: two hosts refreshing one expiry would show here.

    One exception, as rotating providers grant it (Xero keeps the previous refresh token for 30
    minutes, Okta and Auth0 have a reuse interval): a kill -9 can land after this provider rotated
    the pair and before the refreshing process stored it, and nothing a client does can close that
    window. The previous refresh token is taken again only then: a process was killed after the
    pair was issued and the pair was never used (``lost_answers`` counts those)."""

    def __init__(self) -> None:
        self.refresh_token = "rt-0"
        self.previous: str | None = None
        self.issued_at = 0.0
        self.issued_unused = False
        self.last_kill = 0.0
        self.access_tokens = {"at-0"}
        self.refreshes = 0
        self.spent_presented = 0
        self.lost_answers = 0
        self.api_calls: Counter[str] = Counter()

    def killed(self) -> None:
        self.last_kill = time.monotonic()

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        presented = form.get("refresh_token")
        lost = presented == self.previous and self.issued_unused and self.last_kill > self.issued_at
        if form.get("grant_type") != "refresh_token" or (presented != self.refresh_token and not lost):
            self.spent_presented += 1
            return web.json_response({"error": "invalid_grant"}, status=400)
        self.lost_answers += lost
        self.refreshes += 1
        self.previous, self.refresh_token = presented, f"rt-{self.refreshes}"
        self.issued_at, self.issued_unused = time.monotonic(), True
        access = f"at-{self.refreshes}"
        self.access_tokens.add(access)
        return web.json_response({"access_token": access, "refresh_token": self.refresh_token, "expires_in": TOKEN_SECONDS, "token_type": "bearer"})

    async def api(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.api_calls["known" if token in self.access_tokens else "unknown"] += 1
        if token == f"at-{self.refreshes}":
            self.issued_unused = False
        return web.json_response({"id": "me"})


class Upstream:
    """The provider's API behind the proxy: counts the calls that reached it."""

    def __init__(self) -> None:
        self.calls = 0

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.calls += 1
        return web.json_response({"id": "me"})


async def test_events_are_forwarded_exactly_once_while_processes_are_killed(hosts, forwarders, make_node, pg_url, tmp_path):
    gateway = forwarders
    subscriber, upstream, effects, tokens = Subscriber(), Upstream(), Effects(), TokenProvider()
    receiver = web.Application()
    receiver.router.add_post("/hook", subscriber.handle)
    receiver.router.add_post("/effect", effects.handle)
    receiver.router.add_route("*", "/graph/{tail:.*}", upstream.handle)
    receiver.router.add_post("/box/oauth2/token", tokens.token)
    receiver.router.add_route("*", "/box/api/{tail:.*}", tokens.api)
    runner = web.AppRunner(receiver, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, gateway, 0)
    await site.start()
    receiver_port = site._server.sockets[0].getsockname()[1]
    # a provider's API URL must be https or loopback: each host reaches the upstream on its own loopback
    upstream_forwarders = (
        [
            start_forwarder(hosts.command(index, [sys.executable, FORWARDER, "127.0.0.1", str(receiver_port), gateway, str(receiver_port)]))
            for index in range(len(hosts.names))
        ]
        if hosts.isolated
        else []
    )

    config = tmp_path / "patchbay.toml"
    config.write_text(
        f'[providers.facebook]\nwebhook_secret = "{APP_SECRET}"\napi_base_url = "http://127.0.0.1:{receiver_port}/graph"\n\n'
        f'[providers.box]\napi_base_url = "http://127.0.0.1:{receiver_port}/box/api"\ntoken_url = "http://127.0.0.1:{receiver_port}/box/oauth2/token"\n'
        f'client_id = "cluster-client"\nclient_secret = "cluster-client-secret"\n\n'
        f'[webhooks]\nretry_base_ms = 100\nretry_cap_ms = 500\n\n[rate_limits]\nconnect_api = "{API_LIMIT}/minute"\n'
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("PATCHBAY_")}
    common = {
        **base,
        "PATCHBAY_SECRET_KEY": "cluster-secret",
        "PATCHBAY_CONFIG": str(config),
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_LOG_LEVEL": "WARNING",
    }
    local = {**common, "PATCHBAY_DATABASE_URL": pg_url, "PATCHBAY_DATA_DIR": str(tmp_path / "admin")}
    workspace = await asyncio.to_thread(_cli, local, "workspaces", "create", "--name", "Cluster")
    key = (await asyncio.to_thread(_cli, local, "api-keys", "create", "--workspace", workspace["id"]))["key"]

    remote_db = pg_url.replace("127.0.0.1", gateway, 1)
    redis = redis_is_up()
    remote = {**common, "PATCHBAY_DATABASE_URL": remote_db} | ({"PATCHBAY_REDIS_URL": f"redis://{gateway}:6379/0"} if redis else {})
    nodes = [
        make_node(index, role, {**remote, "PATCHBAY_DATA_DIR": str(tmp_path / f"host{index}")}, tmp_path)
        for index, role in enumerate(("serve", "serve", "worker"))
    ]
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            await asyncio.to_thread(node.wait_ready)
        servers = [node for node in nodes if node.role == "serve"]
        headers = {"x-api-key": key}
        api_started = time.time()
        api_passed = 6  # the imports, the subscription and the flow's creation, publication and trigger below
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            async with http.post(
                f"{servers[0].url}/api/connections/import",
                headers=headers,
                json={"providerType": "facebook", "credentials": {"accessToken": "page-token"}, "metadata": {"page_id": PAGE_ID}},
            ) as response:
                assert response.status == 201, await response.text()
                connection_id = (await response.json())["connectionId"]
            async with http.post(
                f"{servers[0].url}/api/connections/import",
                headers=headers,
                json={"providerType": "box", "credentials": {"accessToken": "at-0", "refreshToken": "rt-0", "expiresAt": int(time.time()) - 60}},
            ) as response:
                assert response.status == 201, await response.text()
                box_id = (await response.json())["connectionId"]
            async with http.post(
                f"{servers[0].url}/connect/v1/webhooks/facebook/subscribe",
                headers=headers,
                json={"url": f"http://{gateway}:{receiver_port}/hook", "events": ["*"], "callbackSecret": "cluster-callback"},
            ) as response:
                assert response.status == 201, await response.text()
            steps = [
                {"id": "effect", "type": "http", "method": "POST", "url": f"http://127.0.0.1:{receiver_port}/effect", "body": {"trigger": "{{ trigger }}"}}
            ]
            async with http.post(f"{servers[0].url}/connect/v1/flows", headers=headers, json={"name": "On every event", "steps": steps}) as response:
                assert response.status == 201, await response.text()
                flow_id = (await response.json())["id"]
            async with http.post(f"{servers[0].url}/connect/v1/flows/{flow_id}/publish", headers=headers) as response:
                assert response.status in (200, 201), await response.text()
            async with http.post(
                f"{servers[0].url}/connect/v1/flows/{flow_id}/triggers",
                headers=headers,
                json={"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook", "connectionId": connection_id, "config": {"eventTypes": ["*"]}},
            ) as response:
                assert response.status == 201, await response.text()

            accepted: dict[str, float] = {}
            accepted_n: dict[str, int] = {}
            refused = 0
            counter = iter(range(10**9))
            deadline = time.monotonic() + LOAD_SECONDS

            async def sender() -> None:
                nonlocal refused
                while time.monotonic() < deadline:
                    n = next(counter)
                    body, signed = _signed(n)
                    target = random.choice(servers)
                    try:
                        async with http.post(f"{target.url}/webhook/facebook", data=body, headers=signed) as response:
                            if response.status == 200:
                                event_id = (await response.json())["id"]
                                accepted[event_id] = time.monotonic()
                                accepted_n[event_id] = n
                            else:
                                refused += 1
                    except (TimeoutError, aiohttp.ClientError):
                        refused += 1  # the process died under the request: not accepted, the provider retries
                        await asyncio.sleep(0.05)

            proxied: Counter[int] = Counter()

            async def proxy_sender(provider: str, connection: str) -> None:
                nonlocal api_passed
                while time.monotonic() < deadline:
                    target = random.choice(servers)
                    try:
                        async with http.post(
                            f"{target.url}/connect/v1/proxy/{provider}",
                            headers={**headers, "x-connection-id": connection},
                            json={"method": "GET", "path": "/me"},
                        ) as response:
                            await response.read()
                            proxied[response.status] += 1
                            if response.status == 429:
                                await asyncio.sleep(0.1)  # pacing: the window is spent
                            else:
                                api_passed += 1
                    except (TimeoutError, aiohttp.ClientError):
                        proxied[0] += 1
                        await asyncio.sleep(0.05)

            async def chaos() -> None:
                while time.monotonic() < deadline:
                    await asyncio.sleep(random.uniform(*KILL_EVERY))
                    victim = random.choice(nodes)
                    tokens.killed()
                    await asyncio.to_thread(victim.kill)
                    victim.start()
                    await asyncio.to_thread(victim.wait_ready)

            started = time.monotonic()
            await asyncio.gather(
                chaos(),
                *(sender() for _ in range(SENDERS)),
                *(proxy_sender("facebook", connection_id) for _ in range(PROXY_SENDERS)),
                proxy_sender("box", box_id),
            )
            load_seconds = time.monotonic() - started
            api_ended = time.time()

        converge_deadline = time.monotonic() + 180
        while not (set(accepted) <= set(subscriber.receipts) and set(accepted_n.values()) <= set(effects.by_n)) and time.monotonic() < converge_deadline:
            await asyncio.sleep(0.25)

        async def unfinished() -> int:
            probe = await asyncpg.connect(_dsn(pg_url))
            try:
                return await probe.fetchval("SELECT count(*) FROM flow_executions WHERE status IN ('pending', 'running')")
            finally:
                await probe.close()

        while await unfinished() and time.monotonic() < converge_deadline:  # executions of events whose 200 a kill cut off
            await asyncio.sleep(0.25)
        converged = time.monotonic() - started - load_seconds
        await asyncio.sleep(1.0)  # room for a late second delivery to show up

        connection = await asyncpg.connect(_dsn(pg_url))
        try:
            statuses = dict(await connection.fetch("SELECT status, count(*) FROM webhook_events WHERE id = ANY($1::text[]) GROUP BY status", list(accepted)))
            doubled = await connection.fetch("SELECT event_id FROM webhook_deliveries GROUP BY event_id, subscription_id HAVING count(*) > 1")
            box_status = await connection.fetchval("SELECT status FROM connections WHERE id = $1", box_id)
            processed = await connection.fetchval("SELECT count(*) FROM webhook_events WHERE status = 'PROCESSED'")
            executions = dict(await connection.fetch("SELECT status, count(*) FROM flow_executions WHERE flow_id = $1 GROUP BY status", flow_id))
            stuck = await connection.fetchval("SELECT count(*) FROM jobs WHERE status = 'running' AND lease_until < now() - interval '5 seconds'")
        finally:
            await connection.close()

        # every minute window the API traffic touched (fixed windows, whether anchored at the first hit or on the clock)
        windows = int(api_ended // 60) - int(api_started // 60) + 1
        missing = set(accepted) - set(subscriber.receipts)
        lags = sorted(subscriber.first_seen[i] - accepted[i] for i in accepted if i in subscriber.first_seen)
        kills = sum(node.kills for node in nodes)
        print(
            f"\ncluster: {'network namespaces' if hosts.isolated else 'loopback addresses (no namespaces here)'}, "
            f"rate-limit counters in {'Redis' if redis else 'PostgreSQL (no Redis here)'}, "
            f"2 serve + 1 worker, {load_seconds:.1f} s of load, {kills} kill -9\n"
            f"  accepted {len(accepted)} events ({len(accepted) / load_seconds:.0f}/s), refused or cut {refused}\n"
            f"  forwarded {len(set(subscriber.receipts) & set(accepted))}, repeated receipts of one delivery id "
            f"{sum(count - 1 for count in subscriber.receipts.values())}, all forwarded {converged:.1f} s after the load\n"
            f"  receipt to forward: p50 {lags[len(lags) // 2] if lags else 0:.2f} s, p99 {lags[int(len(lags) * 0.99)] if lags else 0:.2f} s\n"
            f"  flow executions {executions}, side effects repeated {sum(count - 1 for count in effects.by_n.values())} times (same Idempotency-Key)\n"
            f"  token refreshes {tokens.refreshes} (access tokens live {TOKEN_SECONDS} s), spent refresh tokens presented {tokens.spent_presented}, "
            f"refresh answers a kill cut off {tokens.lost_answers}, "
            f"provider API calls {dict(tokens.api_calls)}\n"
            f"  proxy calls by answer {dict(sorted(proxied.items()))} (0: cut by a kill), upstream reached {upstream.calls} times; "
            f"connect API answers past the {API_LIMIT}/minute limit {api_passed} in {windows} window(s)"
        )
        assert kills > 0
        assert accepted, "no event was accepted"
        assert missing == set(), f"{len(missing)} accepted events were never forwarded"
        assert statuses == {"PROCESSED": len(accepted)}
        assert doubled == []
        assert stuck == 0
        assert executions == {"completed": processed}, "one finished execution per stored event (some answered 200 to a client a kill cut off)"
        assert set(accepted_n.values()) <= set(effects.by_n), "every execution's side effect happened"
        assert all(len(keys) == 1 and None not in keys for keys in effects.keys.values()), "a repeated side effect carries its first run's key"
        assert tokens.refreshes > 0 and box_status == "connected"
        assert tokens.spent_presented == 0, "a refresh token was used twice: two refreshes of one expiry"
        assert tokens.api_calls["unknown"] == 0
        assert proxied[429] > 0, "the limit was never reached: raise the load or lower API_LIMIT"
        assert api_passed <= API_LIMIT * windows, "more calls passed the workspace's limit than it allows: counters not shared"
        assert upstream.calls <= API_LIMIT * windows
    finally:
        for node in nodes:
            node.stop()
        for process in upstream_forwarders:
            process.kill()
            process.wait(timeout=10)
        await runner.cleanup()
