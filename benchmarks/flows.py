"""The flow engine: executions per second of a three-step flow (transform, table.lookup, http POST
to a local server) run by the default background workers of one process, on SQLite and on
PostgreSQL, against a bare asyncio loop doing the same three steps with the same database and HTTP
calls, measured in the same run; and the latency from an inbound webhook (a signed Meta leadgen
POST to /webhook/facebook) to the first step of the flow it starts. Beside the three-step flow, in
the same run, a branch-and-loop flow's rate: a transform, a branch (half the executions take a path
holding the table lookup, the others the default path's transform; the untaken path is recorded
skipped), a loop of three items with concurrency 3 (a transform per item) and the same http POST.

    python benchmarks/flows.py [--executions 2000] [--batch 100] [--latency 30] [--databases sqlite,postgresql] [--py-spy DIR]

The app runs with its default settings and background work on (``PATCHBAY_WORKERS`` and the
scheduler as shipped); the settings that differ are printed. Executions are created like the
webhook pipeline creates them: ``--batch`` per ``create_executions`` call (one call per batch of
inbound events), all committed at once; the clock runs from that commit to the last execution's ``finished_at``. The baseline loop runs ``--baseline-concurrency`` tasks, each doing per execution what the
steps do, without the engine: build the output in Python, select the newest matching row of the
table (one session each), POST with one shared aiohttp session. It stores nothing, so it is an upper
bound of the work, not a rival engine.

PostgreSQL runs when PATCHBAY_TEST_DATABASE_URL (or PATCHBAY_BENCH_PG_URL) names a server: a scratch
database is created and dropped. The http step's target (a bare aiohttp handler answering 200) runs
in a process of its own and counts POSTs per ``Idempotency-Key``. The run fails unless every
execution ended ``completed`` after one attempt with its three step records, and the target received
exactly one POST per execution, with that execution's key (the branch-and-loop flow: its six
completed step records and one skipped).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
from _common import pg_drop, pg_scratch
from aiohttp import web
from profiles import start_py_spy, stop_py_spy
from sqlalchemy import func, select, text

from patchbay import hookimpl
from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep, FlowTriggerSubscription
from patchbay.core.flows.service import publish
from patchbay.core.settings import Settings, load_settings
from patchbay.core.tables.service import create_table, upsert_row
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.providers.meta.testing import leadgen_payload, meta_signature
from patchbay.testing import add_connection

APP_SECRET = "bench-app-secret"
CUSTOMERS = 200
TARGET_PORT = 0  # set by main() once the target process is up


def three_steps() -> list[dict]:
    return [
        {"id": "shape", "type": "transform", "output": {"email": "{{ trigger.email | lower }}", "amount": "{{ trigger.amount }}"}},
        {"id": "customer", "type": "table.lookup", "table": "customers", "column": "email", "value": "{{ steps.shape.output.email }}"},
        {
            "id": "notify",
            "type": "http",
            "method": "POST",
            "url": f"http://127.0.0.1:{TARGET_PORT}/hook",
            "body": {"email": "{{ steps.shape.output.email }}", "tier": "{{ steps.customer.output.data.tier }}"},
        },
    ]


def _target(ready, port_out) -> None:
    """The http step's target: counts POSTs per Idempotency-Key, answers 200; ``GET /keys`` answers
    the counts and ``DELETE /keys`` forgets them."""
    keys: Counter[str] = Counter()

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        keys[request.headers.get("Idempotency-Key", "")] += 1
        return web.Response(text="ok")

    async def counted(request: web.Request) -> web.Response:
        return web.json_response(dict(keys))

    async def forget(request: web.Request) -> web.Response:
        keys.clear()
        return web.Response(status=204)

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/hook", hook)
        app.router.add_get("/keys", counted)
        app.router.add_delete("/keys", forget)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.value = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(serve())


async def _target_keys(http: aiohttp.ClientSession, *, forget: bool = False) -> dict[str, int]:
    async with http.get(f"http://127.0.0.1:{TARGET_PORT}/keys") as response:
        keys = await response.json()
    if forget:
        async with http.delete(f"http://127.0.0.1:{TARGET_PORT}/keys"):
            pass
    return keys


class Marks:
    """A step type that notes when it ran, keyed by the lead id of the trigger."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.arrived = asyncio.Event()

    async def run(self, context, config):
        self.seen[str(config.get("key"))] = time.perf_counter()
        self.arrived.set()
        return {"ok": True}

    side_effects = False

    @hookimpl
    def register_step_types(self, register):
        register("bench.mark", self)


_ENVIRON = {"PATCHBAY_SECRET_KEY": "bench-secret-key-0123456789", "PATCHBAY_ALLOW_INSECURE_TARGETS": "true", "PATCHBAY_LOG_LEVEL": "WARNING"}


def _settings(url: str, data_dir: str, *, webhooks: bool) -> Settings:
    settings = load_settings({}, {"PATCHBAY_DATABASE_URL": url, "PATCHBAY_DATA_DIR": data_dir, **_ENVIRON})
    if webhooks:  # the latency figure: Meta's webhook secret, and no call to the real Graph API
        settings.providers = {"facebook": {"webhook_secret": APP_SECRET, "api_base_url": "http://127.0.0.1:9"}}
    return settings


def _differing(settings: Settings) -> str:
    """The top-level settings whose values differ from the defaults (secrets named, not shown)."""
    defaults = load_settings({}, {}).model_dump()
    ours = settings.model_dump()
    shown = []
    for name, value in ours.items():
        if value != defaults.get(name) and name != "plugin_environ":  # the environment given, printed above as settings
            shown.append(f"{name}=<set>" if "secret" in name else f"{name}={value}")
    return ", ".join(shown)


async def _until(predicate, timeout: float = 600.0, every: float = 0.02) -> None:
    deadline = time.perf_counter() + timeout
    while not await predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("benchmark did not finish in time")
        await asyncio.sleep(every)


async def _flow(app, workspace_id: str, steps, name: str) -> str:
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        flow = Flow(name=name, steps=steps, status="draft", version=1)
        session.add(flow)
        await session.flush()
        await publish(session, flow)
    return flow.id


async def _customers(app, workspace_id: str) -> None:
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        await create_table(
            session,
            workspace_id=workspace_id,
            name="Customers",
            slug="customers",
            columns=[{"name": "email", "type": "text"}, {"name": "tier", "type": "text"}],
        )
        for n in range(CUSTOMERS):
            await upsert_row(
                session, workspace_id=workspace_id, table_slug="customers", external_key=f"c{n}", data={"email": f"user{n}@example.com", "tier": "gold"}
            )


def branch_and_loop() -> list[dict]:
    """Completed step records per execution: shape, route, one of lookup/tag, each, its item step
    and notify (the other of lookup/tag is recorded skipped)."""
    return [
        {"id": "shape", "type": "transform", "output": {"email": "{{ trigger.email | lower }}", "amount": "{{ trigger.amount }}"}},
        {
            "id": "route",
            "type": "branch",
            "paths": [
                {
                    "name": "known",
                    "condition": "{{ trigger.known }}",
                    "steps": [{"id": "customer", "type": "table.lookup", "table": "customers", "column": "email", "value": "{{ steps.shape.output.email }}"}],
                }
            ],
            "default": [{"id": "tag", "type": "transform", "output": "new"}],
        },
        {
            "id": "each",
            "type": "loop",
            "items": "{{ trigger.lines }}",
            "concurrency": 3,
            "steps": [{"id": "line", "type": "transform", "output": "{{ loop.item.sku }}"}],
        },
        {
            "id": "notify",
            "type": "http",
            "method": "POST",
            "url": f"http://127.0.0.1:{TARGET_PORT}/hook",
            "body": {"email": "{{ steps.shape.output.email }}", "path": "{{ steps.route.output.path }}", "lines": "{{ steps.each.output.completed }}"},
        },
    ]


def _payload(n: int) -> dict:
    return {"email": f"USER{n % CUSTOMERS}@example.com", "amount": 5 + n % 20, "known": n % 2 == 0, "lines": [{"sku": f"sku-{n}-{i}"} for i in range(3)]}


async def _baseline(app, workspace_id: str, executions: int, concurrency: int) -> tuple[float, float]:
    """The three steps by a bare loop: no engine, no state written."""
    newest = (
        "SELECT id, external_key, data FROM table_rows WHERE workspace_id = :ws AND table_id = :table AND {match} ORDER BY updated_at DESC, id DESC LIMIT 1"
    ).format(match="data ->> 'email' = :email" if app[SERVICES].db.is_postgres else "json_extract(data, '$.email') = :email")
    async with app[SERVICES].db.session() as session:
        table_id = await session.scalar(text("SELECT id FROM data_tables WHERE workspace_id = :ws AND slug = 'customers'"), {"ws": workspace_id})
    todo = iter(range(executions))
    url = f"http://127.0.0.1:{TARGET_PORT}/hook"

    async def loop(http: aiohttp.ClientSession) -> None:
        for n in todo:
            payload = _payload(n)
            shape = {"email": payload["email"].lower(), "amount": payload["amount"]}
            async with app[SERVICES].db.session(tenant=workspace_id) as session:
                row = (await session.execute(text(newest), {"ws": workspace_id, "table": table_id, "email": shape["email"]})).mappings().first()
            data = row["data"] if isinstance(row["data"], dict) else json.loads(row["data"])
            body = {"email": shape["email"], "tier": data["tier"]}
            async with http.post(url, json=body, headers={"Idempotency-Key": f"baseline:{n}"}) as response:
                await response.read()
                assert response.status == 200

    async with aiohttp.ClientSession() as http:
        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(loop(http) for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        keys = await _target_keys(http, forget=True)
    if len(keys) != executions or set(keys.values()) != {1}:
        raise SystemExit(f"the baseline loop did not POST once per execution: {len(keys)} keys for {executions}")
    return executions / elapsed, cpu * 1000 / executions


#: where the samples of a run go, first match wins: (label, a frame that marks it)
_AREAS = (
    ("http step: aiohttp client, outbound checks", "Http.run ("),
    ("template renders (worker thread)", "_render_all ("),
    ("table lookups", "_lookup_many ("),
    ("starts, finishes, step records", "FlowRunner._"),
    ("step timeouts", "Timeout."),
    ("job queue: claim, done", "(core/jobs/"),
    ("running steps (engine)", "(core/flows/"),
    ("SQLAlchemy and driver, under a greenlet (caller not in the stack)", "(sqlalchemy/"),
    ("event loop, sockets", "(asyncio/"),
)


def _areas(collapsed: Path) -> dict[str, str]:
    """The share of samples of each area of ``_AREAS`` in py-spy's collapsed stacks."""
    counts: Counter[str] = Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        counts[next((label for label, marker in _AREAS if marker in stack), "other")] += int(samples)
    total = sum(counts.values()) or 1
    return {label: f"{100 * count / total:.0f}%" for label, count in counts.most_common()}


async def _executions_per_second(
    app, workspace_id: str, executions: int, batch: int, profile: str | None, name: str, steps: list[dict], records: int
) -> tuple[float, dict[str, object]]:
    """The rate of the flow of ``steps``, each execution ending with ``records`` completed step records."""
    flow_id = await _flow(app, workspace_id, steps, name)
    rows = [
        {"workspace_id": workspace_id, "flow_id": flow_id, "version": 1, "trigger_source": "webhook", "trigger_payload": _payload(n)} for n in range(executions)
    ]

    async def finished() -> bool:
        async with app[SERVICES].db.session() as session:
            left = await session.scalar(select(func.count()).select_from(FlowExecution).where(FlowExecution.status.in_(("pending", "running"))))
        return left == 0

    async with app[SERVICES].db.transaction() as session:
        ids = []
        for start in range(0, executions, batch):
            ids += await create_executions(app[SERVICES], session, rows[start : start + batch])
    began, cpu, wall = utcnow(), time.process_time(), time.perf_counter()  # committed: the workers woke
    profile_file = Path(profile) / f"flows-{name}.txt" if profile else None
    profiler = start_py_spy(os.getpid(), profile_file, gil=True) if profile_file else None
    await _until(finished, every=0.25)  # a rare check: it takes CPU from the workers
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None:
        stop_py_spy(profiler)
    async with app[SERVICES].db.session() as session:
        last = await session.scalar(select(func.max(FlowExecution.finished_at)).where(FlowExecution.flow_id == flow_id))
    elapsed = (last - began).total_seconds()
    async with aiohttp.ClientSession() as http:
        keys = await _target_keys(http, forget=True)
    async with app[SERVICES].db.session() as session:
        grouped = (
            select(FlowExecution.status, FlowExecution.attempts, func.count())
            .where(FlowExecution.flow_id == flow_id)
            .group_by(FlowExecution.status, FlowExecution.attempts)
        )
        outcomes = {f"{status}, attempt {attempts}": count for status, attempts, count in (await session.execute(grouped)).all()}
        failure = await session.scalar(select(FlowExecution.error).where(FlowExecution.flow_id == flow_id, FlowExecution.error.is_not(None)).limit(1))
        completed = await session.scalar(
            select(func.count()).select_from(FlowExecutionStep).where(FlowExecutionStep.execution_id.in_(ids), FlowExecutionStep.status == "completed")
        )
    expected_keys = {f"{execution_id}:notify" for execution_id in ids}
    posts = sum(keys.values())
    if outcomes != {"completed, attempt 1": executions} or completed != records * executions or set(keys) != expected_keys or posts != executions:
        raise SystemExit(
            f"executions of {name} did not all complete exactly once: {outcomes}, {completed} step records, {posts} POSTs, "
            f"{len(set(keys) & expected_keys)} of {executions} expected Idempotency-Keys; an error: {failure}"
        )
    report: dict[str, object] = {
        **outcomes,
        "completed step records": completed,
        "POSTs (one per Idempotency-Key)": posts,
        "CPU of this process": f"{cpu / wall:.2f} s/s, {cpu * 1000 / executions:.2f} ms per execution",
    }
    if profiler is not None:
        report["py-spy samples by area"] = _areas(profile_file)
    return executions / elapsed, report


async def _latency(app, port: int, workspace_id: str, marks: Marks, events: int) -> tuple[list[float], list[float]]:
    await add_connection(app, workspace_id, "facebook", meta={"page_id": "bench-page"})
    steps = [{"id": "mark", "type": "bench.mark", "key": "{{ trigger.leadgen_id }}"}, *three_steps()]
    flow_id = await _flow(app, workspace_id, steps, "latency")
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        session.add(FlowTriggerSubscription(flow_id=flow_id, provider_type="facebook", trigger_name="leadgen", kind="webhook", config={}, is_active=True))
    samples = []
    async with aiohttp.ClientSession() as http:
        for n in range(events):
            key = f"lead-{n}"
            body = json.dumps(leadgen_payload("bench-page", key)).encode()
            headers = {"x-hub-signature-256": meta_signature(APP_SECRET, body), "Content-Type": "application/json"}
            marks.arrived.clear()
            began = time.perf_counter()
            async with http.post(f"http://127.0.0.1:{port}/webhook/facebook", data=body, headers=headers) as response:
                assert response.status == 200, await response.text()
            while key not in marks.seen:
                await asyncio.wait_for(marks.arrived.wait(), 30)
                marks.arrived.clear()
            samples.append(marks.seen[key] - began)
        await _target_keys(http, forget=True)
    async with app[SERVICES].db.session() as session:  # where the wait is: before the execution exists, or before a worker starts it
        waits = (await session.execute(select(FlowExecution.created_at, FlowExecution.started_at).where(FlowExecution.flow_id == flow_id))).all()
    return samples, [(started - created).total_seconds() for created, started in waits]


async def run(name: str, url: str, args) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as data_dir:
        marks = Marks()
        settings = _settings(url, data_dir, webhooks=args.latency > 0)
        app = create_app(settings, plugins=[marks])  # background work on: the default workers and scheduler
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            ws = (await create_workspace_with_key(app, plan="enterprise"))["workspace_id"]
            await _customers(app, ws)
            baseline, baseline_cpu = await _baseline(app, ws, args.executions, args.baseline_concurrency)
            rate, outcomes = await _executions_per_second(app, ws, args.executions, args.batch, args.py_spy, name, three_steps(), 3)
            branching, branching_outcomes = await _executions_per_second(
                app, ws, args.executions, args.batch, None, f"{name}-branch-and-loop", branch_and_loop(), 6
            )
            latency, queued = await _latency(app, port, ws, marks, args.latency) if args.latency else ([], [])
        finally:
            await runner.cleanup()
    return {
        "name": name,
        "baseline": baseline,
        "baseline_cpu": baseline_cpu,
        "rate": rate,
        "outcomes": outcomes,
        "branching": branching,
        "branching_outcomes": branching_outcomes,
        "latency": latency,
        "queued": queued,
        "settings": _differing(settings),
    }


def _report(result: dict[str, object], args) -> None:
    baseline, rate, latency = result["baseline"], result["rate"], result["latency"]
    print(f"[{result['name']}]  settings differing from the defaults: {result['settings']}")
    print(
        f"  bare asyncio loop, same three steps ({args.baseline_concurrency} tasks): {baseline:8.0f} executions/s   ({result['baseline_cpu']:.2f} ms CPU per execution)"
    )
    print(f"  patchbay, default workers:                       {rate:8.0f} executions/s   {rate / baseline:5.2f}x the bare loop")
    outcomes = dict(result["outcomes"])
    areas = outcomes.pop("py-spy samples by area", None)
    print(f"  outcomes: {outcomes}")
    if areas:
        print(f"  py-spy samples by area: {areas}")
    print(
        f"  patchbay, branch-and-loop flow (transform, branch, loop of 3, http): {result['branching']:8.0f} executions/s   "
        f"{result['branching'] / rate:5.2f}x the three-step flow, {result['branching'] / baseline:5.2f}x the bare loop of three steps"
    )
    print(f"  outcomes: {result['branching_outcomes']}")
    if latency:
        ordered = sorted(latency)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        print(
            f"  inbound webhook -> first step: p50 {statistics.median(ordered) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms   ({len(ordered)} events);"
            f" of which execution created -> started p50 {statistics.median(result['queued']) * 1000:.1f} ms"
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100, help="executions per create_executions call (one batch of inbound events)")
    parser.add_argument("--baseline-concurrency", type=int, default=64, help="tasks of the bare loop")
    parser.add_argument("--latency", type=int, default=30, help="webhook events for the latency figure (0: skip)")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument(
        "--py-spy",
        metavar="DIR",
        help="sample this process with py-spy while the executions run: collapsed stacks in DIR/flows-<database>.txt, shares by area printed",
    )
    parser.add_argument("--jobs", type=int, help=argparse.SUPPRESS)  # accepted for old command lines; the raw-queue figure is gone
    args = parser.parse_args()
    global TARGET_PORT
    ready, port = multiprocessing.Event(), multiprocessing.Value("i", 0)
    target = multiprocessing.Process(target=_target, args=(ready, port), daemon=True)
    target.start()
    if not ready.wait(30):
        raise SystemExit("the http target did not start")
    TARGET_PORT = port.value
    print(f"one process; {args.executions} executions created {args.batch} per call; {args.latency} webhook events for the latency")
    databases = args.databases.split(",")
    if "sqlite" in databases:
        with tempfile.TemporaryDirectory() as folder:
            _report(await run("sqlite", f"sqlite+aiosqlite:///{folder}/bench.db", args), args)
    pg = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    if "postgresql" not in databases:
        return
    if pg:
        name, url, admin = await pg_scratch(pg, prefix="pb_bench_flows")
        try:
            _report(await run("postgresql", url, args), args)
        finally:
            await pg_drop(admin, name)
    else:
        print("[postgresql] skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")


if __name__ == "__main__":
    asyncio.run(main())
