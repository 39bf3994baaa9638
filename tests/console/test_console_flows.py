"""The flows pages over HTTP: the list, a flow's steps and versions with a diff, publish, revert,
toggle and archive, executions filtered and paged by keyset, an execution's steps, replay; another
workspace's ids answer 404, a viewer's POSTs and a POST without its CSRF token are refused."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import NotFound
from patchbay.core.flows import service as flows
from patchbay.core.flows.models import Flow, FlowExecution
from tests.console.conftest import RivalFlows, console_get, console_post, make_failing_flow


async def test_a_flow_its_steps_versions_and_diff(make_person, sign_in, console_server, failing_flow):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    flow_id, _ = await failing_flow(manager.workspace_id)
    await flows.update_flow(services, workspace_id=manager.workspace_id, flow_id=flow_id, body={"steps": [{"id": "only", "type": "transform", "output": 1}]})
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows"
    status, page = await console_get(http, base)
    assert status == 200 and "Notify CRM" in page
    status, page = await console_get(http, f"{base}/{flow_id}")
    assert status == 200 and "only" in page and "transform" in page and "version 1" in page
    status, page = await console_get(http, f"{base}/{flow_id}/diff?from=1&to=current")
    assert status == 200 and 'class="del"' in page and "notify" in page and 'class="add"' in page
    status, page = await console_get(http, f"{base}/{flow_id}/diff?from=9&to=current")
    assert status == 400 and "versions" in page
    # publish the edit (version 2), revert to 1 (version 3), pause, archive
    assert (await console_post(http, f"{base}/{flow_id}/publish", {}, token_from=base))[0] == 303
    assert (await console_post(http, f"{base}/{flow_id}/revert", {"version": "1"}, token_from=base))[0] == 303
    assert (await console_post(http, f"{base}/{flow_id}/toggle", {}, token_from=base))[0] == 303
    async with services.db.session() as db:
        flow = await db.get(Flow, flow_id)
        assert flow.published_version == 3 and flow.is_active is False and [s["id"] for s in flow.steps] == ["shape", "notify"]
    assert (await console_post(http, f"{base}/{flow_id}/archive", {}, token_from=base))[0] == 303
    async with services.db.session() as db:
        assert (await db.get(Flow, flow_id)).status == "archived"
    status, page = await console_get(http, f"{base}/{flow_id}")
    assert "revert of version 1" in page or "revert" in page


async def test_a_failed_execution_shows_the_failing_step_and_replays(make_person, sign_in, console_server, failing_flow):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    flow_id, execution_id = await failing_flow(manager.workspace_id)
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows/{flow_id}/executions"
    status, page = await console_get(http, f"{base}?status=failed&range=24h")
    assert status == 200 and execution_id in page
    status, page = await console_get(http, f"{base}?status=completed")
    assert status == 200 and execution_id not in page
    status, page = await console_get(http, f"{base}/{execution_id}")
    assert status == 200 and "HTTP 500" in page and "&#34;who&#34;: &#34;ada&#34;" in page.replace("&quot;", "&#34;")
    status, _, location = await console_post(http, f"{base}/{execution_id}/replay", {}, token_from=f"{base}/{execution_id}")
    assert status == 303 and location.startswith(f"{base}/") and location != f"{base}/{execution_id}"
    async with services.db.session() as db:
        replayed = await db.scalar(select(FlowExecution).where(FlowExecution.replay_of == execution_id))
    assert replayed.trigger_payload == {"customer": "ada"} and location.endswith(replayed.id)


async def test_executions_are_paged_by_keyset(make_person, sign_in, console_server, failing_flow, monkeypatch):
    from patchbay.core.console import routes_flows

    monkeypatch.setattr(routes_flows, "PAGE_SIZE", 2)
    services = console_server.app[SERVICES]
    viewer = await make_person("viewer")
    flow_id, first = await failing_flow(viewer.workspace_id)
    ids = [first]
    for _ in range(3):
        execution, _ = await flows.run_flow_now(services, workspace_id=viewer.workspace_id, flow_id=flow_id, payload={"customer": "x"})
        ids.append(execution.id)
    http = await sign_in(viewer)
    path = f"/console/w/{viewer.workspace_id}/flows/{flow_id}/executions"
    seen: list[str] = []
    pages = 0
    while path:
        status, page = await console_get(http, path)
        assert status == 200
        pages += 1
        seen += [i for i in ids if i in page]
        marker = 'href="/console/w/'
        older = [part for part in page.split(marker)[1:] if "Older executions" in part.split("</a>", 1)[0]]
        path = ("/console/w/" + older[0].split('"', 1)[0]).replace("&amp;", "&") if older else None
    assert pages == 2 and sorted(seen) == sorted(ids) and len(seen) == 4
    status, page = await console_get(http, f"/console/w/{viewer.workspace_id}/flows/{flow_id}/executions?before=garbage")
    assert status == 400


async def test_another_workspaces_flow_and_execution_answer_404(console_server, rival_flows: RivalFlows):
    services, r = console_server.app[SERVICES], rival_flows
    for path in (
        f"{r.base}/{r.flow_id}",
        f"{r.base}/{r.flow_id}/executions",
        f"{r.base}/{r.flow_id}/executions/{r.execution_id}",
        f"{r.base}/{r.own_flow}/executions/{r.execution_id}",
    ):
        assert (await console_get(r.http, path))[0] == 404, path
    for path in (f"{r.base}/{r.flow_id}/publish", f"{r.base}/{r.flow_id}/archive", f"{r.base}/{r.own_flow}/executions/{r.execution_id}/replay"):
        assert (await console_post(r.http, path, {}, token_from=r.base))[0] == 404, path
    assert (await console_get(r.http, f"/console/w/{r.theirs.workspace_id}/flows"))[0] == 404
    async with services.db.session() as db:
        assert (await db.get(Flow, r.flow_id)).status == "published"
        assert await db.scalar(select(FlowExecution).where(FlowExecution.replay_of == r.execution_id)) is None


async def test_a_viewer_reads_but_cannot_write_and_csrf_is_checked(make_person, sign_in, console_server, failing_flow):
    services = console_server.app[SERVICES]
    viewer = await make_person("viewer")
    manager = await make_person("manager", viewer.workspace_id)
    flow_id, execution_id = await failing_flow(viewer.workspace_id)
    base = f"/console/w/{viewer.workspace_id}/flows"
    http = await sign_in(viewer)
    status, page = await console_get(http, f"{base}/{flow_id}")
    assert status == 200 and "/publish" not in page and "Notify CRM" in page
    for path in (f"{base}/{flow_id}/archive", f"{base}/{flow_id}/executions/{execution_id}/replay"):
        assert (await console_post(http, path, {}, token_from=base))[0] == 403
    http = await sign_in(manager)
    status, _, _ = await console_post(http, f"{base}/{flow_id}/archive", {"csrf": "forged"}, token_from=base)
    assert status == 403
    async with http.post(http.base + f"{base}/{flow_id}/archive", data={}, allow_redirects=False) as response:
        assert response.status == 403
    async with services.db.session() as db:
        assert (await db.get(Flow, flow_id)).status == "published"
        assert await db.scalar(select(FlowExecution).where(FlowExecution.replay_of == execution_id)) is None


@pytest.mark.both_databases
async def test_the_keyset_of_executions_on_both_databases(aiohttp_client, make_app, database_url, failing_target):
    from patchbay.core.flows.executions import execution_keyset
    from patchbay.core.testing import create_workspace_with_key

    client = await aiohttp_client(make_app(database_url=database_url))
    services = client.server.app[SERVICES]
    workspace_id = (await create_workspace_with_key(services))["workspace_id"]
    flow_id, first = await make_failing_flow(services, workspace_id, failing_target.url)
    ids = {first}
    for _ in range(4):
        ids.add((await flows.run_flow_now(services, workspace_id=workspace_id, flow_id=flow_id, payload={"customer": "x"}))[0].id)
    seen, before, pages = [], None, 0
    while True:
        rows, before = await execution_keyset(
            services, workspace_id=workspace_id, flow_id=flow_id, status="failed", since=None, until=None, before=before, limit=2
        )
        pages += 1
        seen += [row.id for row in rows]
        if before is None:
            break
    assert pages == 3 and len(seen) == 5 and set(seen) == ids
    other = (await create_workspace_with_key(services))["workspace_id"]
    with pytest.raises(NotFound):
        await execution_keyset(services, workspace_id=other, flow_id=flow_id, status=None, since=None, until=None, before=None, limit=2)
