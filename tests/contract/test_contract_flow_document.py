"""The flow routes (flows, executions, schedules, triggers, templates, task history) publish the
models that read and answer their bodies: every operation has a success schema, every body a
model, and the shapes follow the interface specification (4.8 to 4.12)."""

from __future__ import annotations

import re

FLOW_PATHS = re.compile(r"^/connect/v1/(flows|flow-templates|task-history)(/|$)")
#: operations that take a body, with its model and whether it may be left out
BODIES = {
    ("post", "/connect/v1/flows"): ("CreateFlowDto", True),
    ("patch", "/connect/v1/flows/{flowId}"): ("UpdateFlowDto", True),
    ("patch", "/connect/v1/flows/{flowId}/toggle"): ("ToggleDto", False),
    ("post", "/connect/v1/flows/{flowId}/test"): ("TriggerPayload", False),
    ("post", "/connect/v1/flows/{flowId}/invoke"): ("TriggerPayload", False),
    ("post", "/connect/v1/flows/{flowId}/schedules"): ("CreateScheduleDto", True),
    ("patch", "/connect/v1/flows/{flowId}/schedules/{scheduleId}"): ("UpdateScheduleDto", True),
    ("post", "/connect/v1/flows/{flowId}/triggers"): ("CreateTriggerDto", True),
    ("post", "/connect/v1/flow-templates/{slug}/clone"): ("CloneTemplateDto", False),
    ("post", "/connect/v1/flows/{flowId}/publish-as-template"): ("PublishTemplateDto", False),
    ("put", "/connect/v1/flows/settings"): ("FlowSettingsDto", True),
    ("post", "/connect/v1/flows/{flowId}/executions/{executionId}/retry"): ("RetryDto", True),
    ("post", "/connect/v1/flows/approvals/{approvalId}/decision"): ("ApprovalDecisionDto", True),
    ("post", "/connect/v1/flows/approvals/decide"): ("SignedDecisionDto", True),
}
#: pages for people (what a signed approval link opens), not JSON
HTML_PAGES = {("get", "/connect/v1/flows/approvals/decide")}


async def test_every_flow_operation_publishes_its_models(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    document = await (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    operations = {(method, path): operation for path, item in document["paths"].items() if FLOW_PATHS.match(path) for method, operation in item.items()}
    assert len(operations) == 38
    for (method, path), operation in operations.items():
        if (method, path) in HTML_PAGES:
            assert "text/html" in operation["responses"]["200"]["content"]
            continue
        success = [status for status in operation["responses"] if status.startswith("2")]
        # invoke answers 201 with the execution, or whatever status its flow's respond step sets (2XX)
        expected = ["201", "2XX"] if path.endswith("/invoke") else ["201" if method == "post" else "200"]
        assert success == expected, (method, path, operation["responses"])
        assert operation["responses"][success[0]]["content"]["application/json"]["schema"], (method, path)
        if (method, path) in BODIES:
            model, required = BODIES[(method, path)]
            body = operation["requestBody"]
            assert body["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"} and body["required"] is required
        else:
            assert "requestBody" not in operation, (method, path)

    # spec 4.8: publish answers {id, version, status, published_at}; versions {version, published_at}
    publish = document["paths"]["/connect/v1/flows/{flowId}/publish"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert set(schemas[publish["$ref"].rsplit("/", 1)[1]]["required"]) == {"id", "version", "status", "published_at"}
    assert {"version", "published_at"} <= set(schemas["FlowVersionOut"]["required"])
    # contract section 4: the flow list and the executions are page envelopes
    assert set(schemas["FlowOutPage"]["required"]) == {"data", "page", "limit", "total"}
    assert document["paths"]["/connect/v1/task-history"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ExecutionOutPage"
    }
    # a step is one of the step types, told apart by its type; each declares id and type and its own keys
    steps = schemas["CreateFlowDto"]["properties"]["steps"]["items"]
    assert steps["discriminator"]["propertyName"] == "type" and {"$ref": "#/components/schemas/HttpStep"} in steps["oneOf"]
    assert {"id", "type", "url"} <= set(schemas["HttpStep"]["required"]) and schemas["HttpStep"]["additionalProperties"] is True
    assert schemas["FlowOut"]["additionalProperties"] is False
