"""A flow's problems: saved with the draft at create and update, refused at publish with 400 naming
each step and field; the step types' schemas in /openapi.json and at /flows/step-types."""

from __future__ import annotations

import pytest

from patchbay import hookimpl
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection


async def _create(client, h, steps):
    response = await client.post("/connect/v1/flows", json={"name": "f", "steps": steps}, headers=h)
    assert response.status == 201, await response.text()
    return await response.json()


async def _refused(client, h, flow_id) -> str:
    response = await client.post(f"/connect/v1/flows/{flow_id}/publish", headers=h)
    assert response.status == 400
    body = await response.json()
    assert set(body) == {"statusCode", "message"} and body["statusCode"] == 400
    return body["message"]


T = {"type": "transform"}
KINDS = {
    "missing configuration": (
        [{"id": "a", "type": "http", "method": "GET"}],
        [("a", "url", "Field required")],
    ),
    "wrong configuration": (
        [{"id": "a", "type": "loop", "items": [1], "concurrency": 500, "steps": [{"id": "b", **T, "output": 1}]}],
        [("a", "concurrency", "less than or equal to 50")],
    ),
    "unknown step": (
        [{"id": "a", **T, "output": "{{ steps.nope.output }}"}],
        [("a", "output", "refers to steps.nope: no step has that id")],
    ),
    "a later step": (
        [{"id": "a", **T, "output": {"x": "{{ steps['b'].output }}"}}, {"id": "b", **T, "output": 1}],
        [("a", "output.x", "refers to steps.b: that step runs after this one")],
    ),
    "another branch": (
        [
            {
                "id": "route",
                "type": "branch",
                "paths": [{"name": "one", "condition": "trigger.x", "steps": [{"id": "p", **T, "output": 1}]}],
                "default": [{"id": "q", **T, "output": "{{ steps.p.output }}"}],
            },
            {"id": "after", **T, "output": "{{ steps.p.output }}"},
        ],
        [("q", "output", "refers to steps.p: that step may not have run"), ("after", "output", "refers to steps.p: that step may not have run")],
    ),
    "a loop's step from outside": (
        [
            {"id": "each", "type": "loop", "items": [1], "steps": [{"id": "in", **T, "output": "{{ loop.item }}"}]},
            {"id": "z", **T, "output": "{{ steps.in.output }} {{ loop.item }}"},
        ],
        [("z", "output", "refers to steps.in: that step may not have run"), ("z", "output", "refers to loop, which exists only in the steps of a loop")],
    ),
    "a template that does not compile": (
        [{"id": "a", "type": "filter", "condition": "trigger.x >"}],
        [("a", "condition", "the template does not compile")],
    ),
    "an unknown connection": (
        [{"id": "a", "type": "action", "provider": "hubspot", "action": "create_contact", "connectionId": "no-such-connection", "inputs": {}}],
        [("a", "connectionId", "no connection 'no-such-connection' in this workspace")],
    ),
    "an unknown flow": (
        [{"id": "a", "type": "call_flow", "flowId": "no-such-flow"}],
        [("a", "flowId", "no flow 'no-such-flow' in this workspace")],
    ),
    "an unknown goto target": (
        [{"id": "a", **T, "output": 1, "onError": "goto:nowhere"}],
        [("a", "onError", "goto 'nowhere': no step of that id in the same list")],
    ),
    "a goto cycle without a bound": (
        [{"id": "a", **T, "output": 1}, {"id": "b", **T, "output": 2, "onError": "goto:a"}],
        [("b", "onError", "jumps back and could loop forever: set gotoLimit")],
    ),
}


@pytest.mark.both_databases
@pytest.mark.parametrize("kind", list(KINDS))
async def test_a_broken_flow_is_saved_with_its_problems_and_refused_at_publish(flows_client, flows_ws, kind):
    h = flows_ws["headers"]
    steps, expected = KINDS[kind]
    flow = await _create(flows_client, h, steps)
    assert flow["status"] == "draft"
    found = [(p["stepId"], p["field"], p["message"]) for p in flow["problems"]]
    assert len(found) == len(expected), found
    for (step_id, field, message), (want_id, want_field, want_message) in zip(found, expected, strict=True):
        assert (step_id, field) == (want_id, want_field) and want_message in message, found
    refusal = await _refused(flows_client, h, flow["id"])
    for step_id, field, message in found:
        assert f"step {step_id!r} {field}: {message}" in refusal
    assert (await (await flows_client.get(f"/connect/v1/flows/{flow['id']}", headers=h)).json())["problems"] == flow["problems"]
    assert (await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/versions", headers=h)).json()) == []


@pytest.mark.both_databases
async def test_a_repaired_flow_publishes_and_a_bounded_goto_and_known_references_pass(flows_client, flows_ws):
    app, h = flows_client.server.app, flows_ws["headers"]
    connection_id = await add_connection(app, flows_ws["workspace_id"], "hubspot")
    flow = await _create(flows_client, h, [{"id": "a", "type": "http", "method": "GET"}])
    assert flow["problems"][0]["field"] == "url"
    steps = [
        {"id": "a", "type": "http", "method": "POST", "url": "https://example.com/{{ trigger.id }}", "onError": "continue"},
        {
            "id": "route",
            "type": "branch",
            "paths": [{"name": "ok", "condition": "steps.a.status == 'completed'", "steps": [{"id": "p", **T, "output": "{{ steps.a.output.status }}"}]}],
        },
        {"id": "each", "type": "loop", "items": "{{ trigger.rows }}", "steps": [{"id": "in", **T, "output": "{{ loop.item }} {{ steps.a.output }}"}]},
        {"id": "push", "type": "action", "action": "hubspot.create_contact", "connectionId": connection_id, "inputs": {"email": "{{ trigger.email }}"}},
        {"id": "retry", **T, "output": "{{ steps.route.output }} {{ steps.each.output.count }}", "onError": "goto:a", "gotoLimit": 3},
    ]
    repaired = await (await flows_client.patch(f"/connect/v1/flows/{flow['id']}", json={"steps": steps}, headers=h)).json()
    assert repaired["problems"] == []
    assert (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    wrong_action = await _create(flows_client, h, [{"id": "x", "type": "action", "action": "nope", "connectionId": connection_id}])
    assert [(p["stepId"], p["field"]) for p in wrong_action["problems"]] == [("x", "action")]


async def test_a_flow_may_not_call_itself(client, workspace):
    h = workspace["headers"]
    flow = await _create(client, h, [])
    updated = await (
        await client.patch(f"/connect/v1/flows/{flow['id']}", json={"steps": [{"id": "me", "type": "call_flow", "flowId": flow["id"]}]}, headers=h)
    ).json()
    assert [(p["stepId"], p["field"], p["message"]) for p in updated["problems"]] == [("me", "flowId", "a flow cannot call itself")]


async def test_the_structure_of_steps_is_still_refused_at_create(client, workspace):
    h = workspace["headers"]
    nested_duplicate = [{"id": "a", "type": "branch", "paths": [{"name": "x", "condition": "true", "steps": [{"id": "a", **T, "output": 1}]}]}]
    response = await client.post("/connect/v1/flows", json={"name": "f", "steps": nested_duplicate}, headers=h)
    assert response.status == 400 and "steps[0].x[0].id 'a' is used twice" in (await response.json())["message"]
    unknown_nested = [{"id": "a", "type": "loop", "items": [], "steps": [{"id": "b", "type": "nope"}]}]
    response = await client.post("/connect/v1/flows", json={"name": "f", "steps": unknown_nested}, headers=h)
    assert response.status == 400 and "steps[0].steps[0].type 'nope'" in (await response.json())["message"]


class _Stamp:
    """A plugin step type with a configuration schema of its own."""

    side_effects = False
    title = "Stamp"
    config_schema = {"type": "object", "required": ["label"], "properties": {"label": {"type": "string", "minLength": 1}}}

    async def run(self, context, config):
        return config["label"]

    @hookimpl
    def register_step_types(self, register):
        register("test.stamp", self)


async def test_step_types_publish_their_schemas(aiohttp_client, make_app):
    app = make_app(plugins=[_Stamp()])
    client = await aiohttp_client(app)
    h = (await create_workspace_with_key(app))["headers"]
    listed = {t["type"]: t for t in await (await client.get("/connect/v1/flows/step-types", headers=h)).json()}
    assert {"transform", "filter", "http", "action", "table.upsert", "table.lookup", "delay", "branch", "switch", "loop", "call_flow", "respond"} <= set(listed)
    assert "url" in listed["http"]["schema"]["required"] and listed["http"]["sideEffects"] is True
    assert listed["branch"]["control"] is True and listed["loop"]["schema"]["properties"]["concurrency"]["maximum"] == 50
    assert listed["test.stamp"]["schema"] == _Stamp.config_schema and listed["test.stamp"]["title"] == "Stamp"

    document = await (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    create = schemas["CreateFlowDto"]["properties"]["steps"]["items"]
    assert create["discriminator"]["propertyName"] == "type" and len(create["oneOf"]) == 14  # with wait and approval
    assert "url" in schemas["HttpStep"]["required"]
    branch_path = schemas["BranchPath"]["properties"]["steps"]["items"]
    assert branch_path["discriminator"]["mapping"]["loop"].endswith("/LoopStep")
    assert "problems" in schemas["CheckedFlow"]["required"]

    flow = await _create(client, h, [{"id": "s", "type": "test.stamp"}])
    assert [(p["stepId"], p["field"]) for p in flow["problems"]] == [("s", "label")]


async def test_steps_nest_at_most_ten_deep(client, workspace):
    steps = [{"id": "leaf", **T, "output": 1}]
    for level in range(11):
        steps = [{"id": f"l{level}", "type": "loop", "items": [1], "steps": steps}]
    response = await client.post("/connect/v1/flows", json={"name": "deep", "steps": steps}, headers=workspace["headers"])
    assert response.status == 400 and "nest at most 10 deep" in (await response.json())["message"]
