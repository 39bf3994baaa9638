"""The flow editor's form posts over HTTP: a new flow saved as a draft through the flows service
with its problems listed beside their step and field; bad input answered with what is wrong and
nothing saved; save-and-test with a sample payload showing each step (a branch's untaken path
skipped); retry from a failed step after fixing it; a viewer refused, a POST without its CSRF
token refused. The Chromium walk is in ``test_console_flow_editor_browser.py``."""

from __future__ import annotations

import html
import json
import re

from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import engine
from patchbay.core.flows import service as flows
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep
from patchbay.core.flows.testing import drain
from tests.console.conftest import RivalFlows, console_get, console_post


def document(*steps, trigger=None) -> str:
    return json.dumps({"trigger": trigger, "steps": list(steps)})


def branch_flow(url: str) -> list[dict]:
    return [
        {
            "id": "route",
            "type": "branch",
            "paths": [
                {
                    "name": "big",
                    "condition": "trigger.amount > 100",
                    "steps": [{"id": "notify", "type": "http", "method": "POST", "url": url, "body": {"who": "{{ trigger.customer }}"}}],
                }
            ],
            "default": [{"id": "small", "type": "transform", "output": {"ok": True}}],
        },
        {"id": "done", "type": "transform", "output": {"path": "{{ steps.route.output.path }}"}},
    ]


async def flow_count(services, workspace_id: str) -> int:
    async with services.db.session(tenant=workspace_id) as session:
        return await session.scalar(select(func.count()).select_from(Flow))


async def test_the_editor_creates_a_draft_and_lists_its_problems_beside_step_and_field(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows"
    status, page = await console_get(http, base)
    assert status == 200 and f'href="{base}/new"' in page
    status, page = await console_get(http, f"{base}/new")
    assert status == 200 and 'id="flow-editor-data"' in page and "flow_editor.js" in page
    data = json.loads(html.unescape(re.search(r'<script type="application/json" id="flow-editor-data">(.*?)</script>', page, re.S).group(1)))
    assert {"http", "branch", "loop", "action"} <= {t["type"] for t in data["stepTypes"]}
    assert data["stepTypes"][0]["schema"]["properties"]
    form = {"name": "Route orders", "document": document({"id": "a", "type": "http", "method": "GET"}), "intent": "save"}
    status, _, location = await console_post(http, f"{base}/new", form, token_from=f"{base}/new")
    assert status == 303 and location.endswith("/edit")
    flow_id = location.split("/")[-2]
    async with services.db.session(tenant=manager.workspace_id) as session:
        flow = await session.get(Flow, flow_id)
    assert flow.status == "draft" and flow.name == "Route orders" and flow.steps == [{"id": "a", "type": "http", "method": "GET"}]
    status, page = await console_get(http, location)
    assert status == 200
    problems = re.search(r'<ul id="flow-problems">(.*?)</ul>', page, re.S).group(1)
    assert 'data-step="a" data-field="url"' in problems and "Field required" in problems
    data = json.loads(html.unescape(re.search(r'id="flow-editor-data">(.*?)</script>', page, re.S).group(1)))
    assert {"stepId": "a", "field": "url", "message": "Field required"} in data["problems"]
    # the flow page links to the editor; publishing refuses the flow with the same problem
    assert f'href="{base}/{flow_id}/edit"' in (await console_get(http, f"{base}/{flow_id}"))[1]
    status, page, _ = await console_post(http, f"{base}/{flow_id}/publish", {}, token_from=base)
    assert status == 400 and "url" in page


async def test_bad_input_is_listed_and_nothing_is_saved(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows"
    cases = [
        ({"name": "X", "document": "{not json"}, "does not parse"),
        ({"name": "X", "document": document({"id": "a", "type": "transform", "output": 1}, {"id": "a", "type": "transform", "output": 2})}, "used twice"),
        ({"name": "X", "document": document({"id": "a", "type": "teleport"})}, "not a known step type"),
        ({"name": "", "document": document()}, "name"),
        ({"name": "X", "document": document(), "intent": "test", "payload": "[1,"}, "sample payload is not JSON"),
    ]
    for form, reason in cases:
        status, page, _ = await console_post(http, f"{base}/new", form, token_from=f"{base}/new")
        assert status == 400, (form, status)
        assert reason in html.unescape(page) and 'id="editor-error"' in page, reason
        assert html.escape(form["document"], quote=False) in page or form["document"] in html.unescape(page), "what was typed is kept"
    assert await flow_count(services, manager.workspace_id) == 0
    flow, _ = await flows.create_flow(
        services, workspace_id=manager.workspace_id, body={"name": "Kept", "steps": [{"id": "a", "type": "transform", "output": 1}]}
    )
    status, _, _ = await console_post(http, f"{base}/{flow.id}/edit", {"name": "Kept", "document": '{"steps": 3}'}, token_from=f"{base}/{flow.id}/edit")
    assert status == 400
    async with services.db.session(tenant=manager.workspace_id) as session:
        assert (await session.get(Flow, flow.id)).steps == [{"id": "a", "type": "transform", "output": 1}]


async def test_save_and_test_shows_each_step_and_the_untaken_path_skipped(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows"
    form = {"name": "Orders", "document": document(*branch_flow(receiver.url + "/orders")), "intent": "test", "payload": '{"amount": 250, "customer": "ada"}'}
    status, _, location = await console_post(http, f"{base}/new", form, token_from=f"{base}/new")
    assert status == 303 and "/edit?run=" in location
    execution_id = location.split("run=")[1].split("#")[0]
    assert json.loads(receiver.requests[0]["body"]) == {"who": "ada"}
    status, page = await console_get(http, location)
    assert status == 200 and 'id="test-run"' in page
    run = page.split('id="test-run"')[1]
    for step_id, state in (("route", "completed"), ("notify", "completed"), ("small", "skipped"), ("done", "completed")):
        assert re.search(
            rf'data-step="{step_id}">\s*<h3><span class="mono">{step_id}</span> <span class="badge">[a-z]+</span> <span class="status-{state}">', run
        ), step_id
    assert "took path <strong>big</strong>" in run and "its path was not taken" in run
    assert "&#34;amount&#34;: 250" in page.replace("&quot;", "&#34;"), "the sample payload is kept in its field"
    async with services.db.session(tenant=manager.workspace_id) as session:
        execution = await session.get(FlowExecution, execution_id)
        assert execution.status == "completed" and execution.trigger_source == "test"


async def test_a_failed_step_is_fixed_in_the_editor_and_retried_from(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/flows"
    steps = [
        {"id": "first", "type": "http", "method": "POST", "url": receiver.url + "/first", "body": {"n": 1}},
        {"id": "second", "type": "http", "method": "POST", "url": "http://127.0.0.1:9/nowhere", "body": {"from": "{{ steps.first.output.status }}"}},
    ]
    form = {"name": "Two calls", "document": document(*steps), "intent": "test", "payload": "{}"}
    status, _, location = await console_post(http, f"{base}/new", form, token_from=f"{base}/new")
    flow_id, failed_id = location.split("/")[-2], location.split("run=")[1].split("#")[0]
    status, page = await console_get(http, location)
    assert "status-failed" in page and "Retry from second" in page
    steps[1]["url"] = receiver.url + "/second"
    status, _, _ = await console_post(http, f"{base}/{flow_id}/edit", {"name": "Two calls", "document": document(*steps)}, token_from=f"{base}/{flow_id}/edit")
    assert status == 303
    execution_page = f"{base}/{flow_id}/executions/{failed_id}"
    assert "Retry from second" in (await console_get(http, execution_page))[1]
    status, _, location = await console_post(http, f"{execution_page}/retry", {"fromStep": "second", "version": "current"}, token_from=execution_page)
    assert status == 303 and f"{base}/{flow_id}/executions/" in location and not location.endswith(failed_id)
    retried_id = location.rsplit("/", 1)[1]
    await drain(services, kinds=(engine.JOB_KIND,))
    async with services.db.session(tenant=manager.workspace_id) as session:
        retried = await session.get(FlowExecution, retried_id)
        records = {r.step_id: r for r in await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == retried_id))}
    assert retried.status == "completed" and retried.replay_of == failed_id, retried.error
    assert [r["path"] for r in receiver.requests] == ["/first", "/second"], "first was reused, not sent again"
    assert records["first"].status == "completed" and json.loads(receiver.requests[1]["body"]) == {"from": 200}
    # a retry of a completed execution is refused with the reason
    status, page, _ = await console_post(http, f"{base}/{flow_id}/executions/{retried_id}/retry", {"fromStep": "second"}, token_from=execution_page)
    assert status == 409 and "only a failed execution" in page


async def test_a_viewer_is_refused_and_the_csrf_token_is_checked(make_person, sign_in, console_server, failing_flow):
    services = console_server.app[SERVICES]
    viewer = await make_person("viewer")
    manager = await make_person("manager", viewer.workspace_id)
    flow_id, execution_id = await failing_flow(viewer.workspace_id)
    base = f"/console/w/{viewer.workspace_id}/flows"
    http = await sign_in(viewer)
    assert (await console_get(http, f"{base}/new"))[0] == 403
    assert (await console_get(http, f"{base}/{flow_id}/edit"))[0] == 403
    status, page = await console_get(http, base)
    assert status == 200 and f"{base}/new" not in page
    status, page = await console_get(http, f"{base}/{flow_id}/executions/{execution_id}")
    assert status == 200 and "Retry from" not in page
    edit = {"name": "Taken over", "document": document({"id": "x", "type": "transform", "output": 1})}
    for path, form in ((f"{base}/new", edit), (f"{base}/{flow_id}/edit", edit), (f"{base}/{flow_id}/executions/{execution_id}/retry", {"fromStep": "notify"})):
        assert (await console_post(http, path, form, token_from=base))[0] == 403, path
    http = await sign_in(manager)
    assert (await console_post(http, f"{base}/{flow_id}/edit", {**edit, "csrf": "forged"}, token_from=base))[0] == 403
    async with services.db.session(tenant=viewer.workspace_id) as session:
        assert (await session.get(Flow, flow_id)).name == "Notify CRM"
        assert await session.scalar(select(func.count()).select_from(Flow)) == 1
        assert await session.scalar(select(FlowExecution).where(FlowExecution.replay_of == execution_id)) is None


async def test_another_workspaces_flow_is_neither_edited_nor_retried_nor_its_run_shown(console_server, rival_flows: RivalFlows):
    services, r = console_server.app[SERVICES], rival_flows
    assert (await console_get(r.http, f"{r.base}/{r.flow_id}/edit"))[0] == 404
    assert (await console_get(r.http, f"{r.base}/{r.own_flow}/edit?run={r.execution_id}"))[0] == 404
    edit = {"name": "Taken over", "document": document({"id": "x", "type": "transform", "output": 1})}
    assert (await console_post(r.http, f"{r.base}/{r.flow_id}/edit", edit, token_from=r.base))[0] == 404
    assert (await console_post(r.http, f"{r.base}/{r.own_flow}/executions/{r.execution_id}/retry", {"fromStep": "notify"}, token_from=r.base))[0] == 404
    async with services.db.session(tenant=r.theirs.workspace_id) as session:
        assert (await session.get(Flow, r.flow_id)).name == "Notify CRM"
        assert await session.scalar(select(FlowExecution).where(FlowExecution.replay_of == r.execution_id)) is None
