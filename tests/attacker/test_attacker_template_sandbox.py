"""Attacks on the flow template sandbox, sent as a tenant would: a flow whose step is a template
that grows a string past any use, or burns the CPU, run by ``POST /connect/v1/flows/{id}/test``."""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.flows.template_bounds import MAX_RENDER_CPU_SECONDS
from patchbay.core.testing import create_workspace_with_key

#: how many times the template grows its million characters (the attack of the report: 1,000, a
#: thousand million characters)
GROWTH = 1000
#: the report's 90-character template: a million characters, each replaced by ``GROWTH`` of them
GROWING = f"{{{{ ('x' * 999999).replace('x', 'x' * {GROWTH}) | length }}}}"
#: what the render may allocate at its peak
MEMORY_BOUND = 64 * 1024 * 1024
#: CPU burners: each ran for seconds in one call, holding a render thread past its step's timeout
BURNERS = [
    "{{ lipsum(50000, False, 20, 100) | length }}",
    "{% for i in range(5) %}{{ ('ab ' * 333333) | title | length }}{% endfor %}",
    # one big-number division of about 6 s, inside a single call that no hook interrupts
    "{% set a = ('f' * 999999) | int(base=16) %}{% set b = ('f' * 499999) | int(base=16) %}{{ a // b > 0 }}",
]
#: templates that allocate hundreds of megabytes, or burn seconds of CPU, in one C call, which no
#: hook sees until it returns (sized to do so quickly on a sandbox that lets them run)
ONE_CALL = [
    "{{ (0).to_bytes(300000000, 'big') | length }}",
    "{{ [1, 2] | tojson(indent=50000000) | length }}",
    "{% set big = [0] * 333333 %}{% macro f(n) %}{% set c = big[::-1] %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(250) | length }}",
    "{{ 5 | round(-3000000) }}",
    "{{ ('.' * 12000 ~ 'b.') | urlize | length }}",
    "{% set a = (1).from_bytes(('x' * 600000).encode(), 'big') %}{% set b = (1).from_bytes(('x' * 300000).encode(), 'big') %}{{ a % b > 0 }}",
    "{{ '" + "a" * 3000000 + "' | length }}",  # compiling it took 226 MB
]
#: the timeout of every step below; the report's victim failed with "step timed out after 10s"
STEP_TIMEOUT = 10
#: how long the other tenant's trivial flow may take while the burners run
VICTIM_SECONDS = 5


async def _flow(client, headers, output, name="attack") -> str:
    steps = [{"id": "render", "type": "transform", "output": output, "timeoutSeconds": STEP_TIMEOUT}]
    response = await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=headers)
    assert response.status == 201, await response.text()
    return (await response.json())["id"]


async def _test_run(client, headers, flow_id, payload=None) -> dict:
    response = await client.post(f"/connect/v1/flows/{flow_id}/test", json=payload or {}, headers=headers)
    assert response.status == 201, await response.text()
    return await response.json()


async def _measured_run(client, headers, template) -> tuple[dict, int, float]:
    """A test run of a flow rendering ``template``: its answer, the peak memory allocated and the
    CPU time the process took meanwhile."""
    flow_id = await _flow(client, headers, template)
    tracemalloc.start()
    began = time.process_time()
    try:
        run = await _test_run(client, headers, flow_id)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return run, peak, time.process_time() - began


async def test_a_template_cannot_grow_a_string_past_the_bound(client, workspace):
    run, peak, _ = await _measured_run(client, workspace["headers"], GROWING)
    assert run["status"] == "failed", run
    assert "would be longer than" in run["steps"][0]["error"]
    assert peak < MEMORY_BOUND


#: the CPU one of them may take in all, the server's own work on the request included
ONE_CALL_CPU_SECONDS = MAX_RENDER_CPU_SECONDS + 1


@pytest.mark.parametrize("template", ONE_CALL)
async def test_a_single_call_cannot_allocate_or_burn_past_the_bounds(client, workspace, template):
    run, peak, cpu = await _measured_run(client, workspace["headers"], template)
    assert run["status"] == "failed", run
    assert cpu < ONE_CALL_CPU_SECONDS
    assert peak < MEMORY_BOUND


async def _started_tests(app, count: int) -> None:
    """Wait until ``count`` test executions have started (their renders begun, queued or done)."""
    while True:
        async with app[SERVICES].db.session() as session:
            started = await session.scalar(select(func.count()).select_from(FlowExecution))
        if started >= count:
            return
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("burner", BURNERS)
@pytest.mark.slow  # about 3 s (setup and call)
async def test_four_tenants_burning_the_cpu_do_not_starve_a_fifth(client, burner):
    app = client.server.app
    tenants = [await create_workspace_with_key(app, name=f"burner {n}") for n in range(4)]
    victim = await create_workspace_with_key(app, name="victim")
    flows = [await _flow(client, tenant["headers"], burner) for tenant in tenants]
    quiet = await _flow(client, victim["headers"], "hello {{ trigger.name }}")

    burns = [asyncio.create_task(_test_run(client, tenant["headers"], flow_id)) for tenant, flow_id in zip(tenants, flows, strict=True)]
    await asyncio.wait_for(_started_tests(app, len(burns)), STEP_TIMEOUT)
    began = time.monotonic()
    run = await asyncio.wait_for(_test_run(client, victim["headers"], quiet, {"name": "Ada"}), 3 * STEP_TIMEOUT)
    waited = time.monotonic() - began
    assert run["status"] == "completed", run
    assert run["steps"][0]["output"] == "hello Ada"
    assert waited < VICTIM_SECONDS

    burnt = await asyncio.wait_for(asyncio.gather(*burns), 3 * STEP_TIMEOUT)
    assert [b["status"] for b in burnt] == ["failed"] * len(burns)
    began = time.monotonic()  # the render threads are free again: a render takes no wait
    assert (await _test_run(client, victim["headers"], quiet, {"name": "Bo"}))["steps"][0]["output"] == "hello Bo"
    assert time.monotonic() - began < 1
