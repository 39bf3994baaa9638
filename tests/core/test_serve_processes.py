"""``patchbay serve --processes N``: the processes share one port, stop together on SIGTERM, a killed
one is restarted, the periodic jobs run once, the rate limits hold across the processes on SQLite,
and a ``kill -9`` of one process under load loses no accepted inbound event (PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from sqlalchemy import func, select, update

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.settings import load_settings
from patchbay.core.storage.db import Database
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection

pytestmark = pytest.mark.slow  # patchbay serve processes of their own, killed and restarted

PATCHBAY = str(Path(sys.executable).with_name("patchbay"))
ACCESS = re.compile(r"\[process (\d+) pid (\d+)\] aiohttp\.access (\{.*\})")
APP_SECRET = "processes-app-secret"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> set[int]:
    try:
        return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except FileNotFoundError:
        return set()


def _alive(pid: int) -> bool:
    """Whether any thread of ``pid`` has yet to exit. The first thread shows as a zombie while
    the others are still exiting, and those still hold the process's files (its sockets)."""
    states = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return any(state not in ("Z", "X") for state in states)


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Server:
    """``patchbay serve --processes N`` on a free port, its output in a file."""

    def __init__(self, tmp_path: Path, count: int, *, database_url: str | None = None, config: str = "", **env: str) -> None:
        self.port = _free_port()
        self.log = tmp_path / f"serve-{self.port}.log"
        environ = {
            **os.environ,
            "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
            "PATCHBAY_SECRET_KEY": "processes-test-secret",
            "PATCHBAY_WORKERS": "0",
            "PATCHBAY_SCHEDULER": "false",
            "PATCHBAY_LOG_LEVEL": "INFO",
            "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
            **env,
        }
        for name in ("PATCHBAY_BASE_URL", "PATCHBAY_ISSUER", "PATCHBAY_PORT", "PATCHBAY_CONFIG", "PATCHBAY_PROCESSES", "PATCHBAY_REDIS_URL"):
            environ.pop(name, None)
        if database_url:
            environ["PATCHBAY_DATABASE_URL"] = database_url
        else:
            environ.pop("PATCHBAY_DATABASE_URL", None)
        if config:
            path = tmp_path / f"patchbay-{self.port}.toml"
            path.write_text(config)
            environ["PATCHBAY_CONFIG"] = str(path)
        self.process = subprocess.Popen(
            [PATCHBAY, "serve", "--port", str(self.port), "--processes", str(count)], env=environ, stdout=self.log.open("w"), stderr=subprocess.STDOUT
        )
        self.count = count
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_serving(self, timeout: float = 120) -> set[int]:
        """Until every process says it serves; answers the children's pids."""

        def serving():
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            children = _children(self.process.pid)
            text = self.log.read_text()
            return children if len(children) == self.count and all(f"(pid {pid}) is serving" in text for pid in children) else None

        return _until(serving, timeout, "every process to serve")

    def get(self, path: str, request_id: str) -> int:
        """A request on a connection of its own."""
        request = urllib.request.Request(self.url + path, headers={"X-Request-Id": request_id, "Connection": "close"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def answered_by(self) -> dict[str, tuple[int, int]]:
        """request id -> (process index, pid), from the access log lines."""
        found = {}
        for match in ACCESS.finditer(self.log.read_text()):
            found[json.loads(match.group(3))["request_id"]] = (int(match.group(1)), int(match.group(2)))
        return found

    def pids_answering(self, prefix: str, count: int = 40) -> set[int]:
        for n in range(count):
            assert self.get("/health", f"{prefix}{n}") == 200
        ids = {f"{prefix}{n}" for n in range(count)}

        def every_line():  # each process writes its access lines in batches, at its own moment
            found = self.answered_by()
            return {found[rid][1] for rid in ids} if ids <= found.keys() else None

        return _until(every_line, 10, "the access lines")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


@pytest.fixture
def servers():
    started: list[Server] = []

    def start(*args, **kwargs) -> Server:
        server = Server(*args, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        children = _children(server.process.pid)
        server.stop()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_two_processes_answer_on_one_port_and_sigterm_stops_all(tmp_path, servers):
    server = servers(tmp_path, 2)
    children = server.wait_serving()
    assert len(children) == 2 and server.process.pid not in children
    assert server.pids_answering("a") == children  # new connections reach both processes
    text = server.log.read_text()
    assert "processes:         2" in text and text.count("patchbay is listening on") == 1
    # process 0 starts alone: what a first start writes to the database is made once, not raced for
    assert text.index("process 1 started") > re.search(r"process 0 \(pid \d+\) is serving", text).start()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0
    assert not any(_alive(pid) for pid in children)


def test_a_killed_process_is_restarted_and_serves_again(tmp_path, servers):
    server = servers(tmp_path, 2)
    children = server.wait_serving()
    victim = min(children)
    os.kill(victim, signal.SIGKILL)
    _until(lambda: not _alive(victim), 10, "the kill")
    replaced = _until(lambda: c if len(c := _children(server.process.pid)) == 2 and victim not in c else None, 30, "a new process")
    (new,) = replaced - children
    _until(lambda: f"(pid {new}) is serving" in server.log.read_text(), 60, "the new process to serve")
    assert "exited with signal 9" in server.log.read_text()
    assert new in server.pids_answering("b")
    server.stop()
    assert server.process.returncode == 0


def test_a_kill_9_of_the_parent_takes_its_children_and_frees_the_port(tmp_path, servers):
    server = servers(tmp_path, 2)
    children = server.wait_serving()
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=30)
    _until(lambda: not any(_alive(pid) for pid in children), 10, "the children to die with their parent")
    with socket.socket() as sock:  # the port is free again at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", server.port))


def test_periodic_jobs_run_once_per_tick_from_the_first_process(tmp_path, servers, sqlite_url):
    server = servers(tmp_path, 2, database_url=sqlite_url, PATCHBAY_SCHEDULER="true", PATCHBAY_WORKERS="2")
    server.wait_serving()

    async def cron_jobs():
        db = Database(sqlite_url)
        try:
            async with db.session() as session:
                return (await session.execute(select(Job.kind, Job.payload, Job.status, Job.attempts).where(Job.kind.like("cron:%")))).all()
        finally:
            await db.close()

    def ran():
        rows = asyncio.run(cron_jobs())
        return rows if len({row.kind for row in rows}) >= 10 and all(row.status in ("done", "failed") for row in rows) else None

    rows = _until(ran, 60, "the periodic jobs")  # each one ticks when the scheduler starts
    ticks = [(row.kind, row.payload["tick"]) for row in rows]
    assert len(ticks) == len(set(ticks))  # one job per tick
    assert all(row.attempts == 1 for row in rows)  # each run once
    scheduling = [line for line in server.log.read_text().splitlines() if "periodic scheduler started" in line]
    assert len(scheduling) == 1 and "[process 0 " in scheduling[0]


def test_the_connect_api_limit_holds_across_processes_on_sqlite(tmp_path, servers):
    server = servers(tmp_path, 2, config='[rate_limits]\nconnect_api = "10/day"\n')
    children = server.wait_serving()
    statuses = {f"c{n}": server.get("/connect/v1/providers", f"c{n}") for n in range(40)}

    def logged():
        answered = server.answered_by()
        return answered if set(statuses) <= set(answered) else None

    answered = _until(logged, 10, "the access lines")
    assert {answered[rid][1] for rid in statuses} == children  # both processes counted hits
    assert sum(1 for status in statuses.values() if status != 429) == 10  # the limit, not twice it


# -- a kill -9 of one process under load (PostgreSQL) ------------------------------------------------


class Receiver:
    """The subscriber: records the event id of every forwarded delivery."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        async def receive(request: web.Request) -> web.Response:
            await request.read()
            self.ids.append(request.headers["X-Connect-Delivery"])
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_post("/hook", receive)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/hook"


async def test_a_kill_9_of_one_process_under_load_loses_no_accepted_event(tmp_path, servers, pg_url):
    receiver = Receiver()
    await receiver.start()
    config = f'[providers.facebook]\nwebhook_secret = "{APP_SECRET}"\n\n[webhooks]\nretry_base_ms = 50\nretry_cap_ms = 200\n'
    environ = {"PATCHBAY_SECRET_KEY": "processes-test-secret", "PATCHBAY_DATA_DIR": str(tmp_path / "data"), "PATCHBAY_DATABASE_URL": pg_url}
    app = create_app(load_settings({}, environ), background=False)  # set-up and checks
    services = app[SERVICES]
    try:
        ws = await create_workspace_with_key(app)
        await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
        async with services.db.transaction(tenant=ws["workspace_id"]) as session:
            session.add(WebhookSubscription(provider="facebook", url=receiver.url, events=["*"], secret=services.secrets.encrypt("cb-secret-1234")))
        server = servers(tmp_path, 2, database_url=pg_url, config=config, PATCHBAY_WORKERS="4")
        children = await asyncio.to_thread(server.wait_serving)

        accepted: set[str] = set()
        cut = 0
        stop = asyncio.Event()

        async def sender(n: int, session: aiohttp.ClientSession) -> None:
            nonlocal cut
            count = 0
            while not stop.is_set():
                count += 1
                body = json.dumps(page_event_payload("page-A", value={"sender": n, "n": count})).encode()
                try:
                    async with session.post(
                        f"{server.url}/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)}
                    ) as response:
                        if response.status == 200:
                            accepted.add((await response.json())["id"])
                        else:
                            cut += 1
                except (TimeoutError, aiohttp.ClientError):
                    cut += 1  # the kill cut this call: not accepted, the provider sends it again

        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20), connector=aiohttp.TCPConnector(force_close=True)) as session:
            senders = [asyncio.create_task(sender(n, session)) for n in range(8)]
            await _wait_for(lambda: len(accepted) >= 100, 60, "load")
            victim = min(children)
            os.kill(victim, signal.SIGKILL)
            killed_at = len(accepted)

            def replaced():
                now = _children(server.process.pid)
                new = now - children
                return new if len(now) == 2 and new and all(f"(pid {pid}) is serving" in server.log.read_text() for pid in new) else None

            await _wait_for(replaced, 60, "the killed process's replacement")
            await _wait_for(lambda: len(accepted) >= killed_at + 100, 60, "load after the restart")
            stop.set()
            await asyncio.gather(*senders)

        # the dead process's jobs come back when their leases run out (60 s): make that now
        async with services.db.transaction() as session:
            await session.execute(
                update(Job)
                .where(Job.status == "running", Job.locked_by.like(f"%:{victim}:%"))
                .values(lease_until=func.now())
                .execution_options(synchronize_session=False)
            )
        await _wait_for(lambda: accepted <= set(receiver.ids), 120, "every accepted event forwarded")
        async with services.db.session() as session:
            events = {row.id: row.status for row in (await session.execute(select(WebhookEvent.id, WebhookEvent.status))).all()}
            deliveries = (await session.execute(select(WebhookDelivery.event_id, WebhookDelivery.status))).all()
        assert accepted <= set(events)  # every 200 was stored
        assert all(events[event_id] == "PROCESSED" for event_id in accepted)
        per_event: dict[str, int] = {}
        for delivery in deliveries:
            per_event[delivery.event_id] = per_event.get(delivery.event_id, 0) + 1
        assert all(per_event.get(event_id) == 1 for event_id in accepted)  # forwarded once: one delivery each
        repeated = len(receiver.ids) - len(set(receiver.ids))
        print(f"\naccepted {len(accepted)} events, {cut} calls cut or refused, {repeated} repeated receipts (same delivery id), killed pid {victim}")
        assert repeated <= 8  # only deliveries the killed process had in flight (8 senders, 4 jobs at once)
    finally:
        await services.db.close()
        await receiver.runner.cleanup()


async def _wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _two_free_ports() -> int:
    """A port whose next one is free too."""
    for _ in range(50):
        port = _free_port()
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise AssertionError("no two free ports in a row")


def test_each_process_answers_metrics_on_its_own_port(tmp_path, servers):
    metrics_port = _two_free_ports()
    server = servers(tmp_path, 2, PATCHBAY_METRICS_LISTEN=f"127.0.0.1:{metrics_port}")
    server.wait_serving()
    for port in (metrics_port, metrics_port + 1):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert b"patchbay_http_requests" in response.read()
    assert f"metrics:           http://127.0.0.1:{metrics_port}/metrics (process 0; the next 1 port(s): the other processes)" in server.log.read_text()
