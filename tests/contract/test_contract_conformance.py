"""schemathesis' positive phases against the connect API on a real port: every answer matches the
schema /openapi.json gives for its status (``response_schema_conformance``: the response models of
``core.http.responses`` for 2xx, ``Error`` for 4xx), and no generated input is a server error.

Bounded for CI: a few examples per operation, the connect API's areas only (providers,
connections, tables, flows with their executions, schedules, triggers and templates, task history,
webhook subscriptions; the proxy needs an upstream and is left out), and a budget after which the
run fails instead of hanging."""

from __future__ import annotations

import pytest

from tests.contract.conformance import Operations

BUDGET_SECONDS = 240
MAX_EXAMPLES = 5
#: the operations checked: the connect API but the proxy (which needs an upstream)
PATHS = r"^/(connect/v1/(providers|connections|tables|flows|flow-templates|task-history|webhooks/[^/]+/subscri)|api/connections)"


async def _seed(api) -> dict[str, str]:
    """A connection, a table with rows, a published flow with an execution and a schedule, so that
    answers carry data and the path parameters schemathesis is given name things that exist; a
    spare flow and schedule for the deletes, which would otherwise take the others away early."""
    connected = await api.call("POST", f"/connect/v1/providers/{api.provider}/connect", expect=201, json={"credentials": {"apiKey": "k-1"}})
    table = {"name": "People", "slug": "people", "columns": [{"name": "email", "type": "text"}, {"name": "age", "type": "number"}]}
    await api.call("POST", "/connect/v1/tables", expect=201, json=table)
    for index in range(3):
        row = {"data": {"email": f"p{index}@example.com", "age": 30 + index}, "external_key": f"p{index}"}
        await api.call("POST", "/connect/v1/tables/people/rows", expect=201, json=row)
    flow = await api.call("POST", "/connect/v1/flows", expect=201, json={"name": "Echo", "steps": [{"id": "t", "type": "transform", "output": {"ok": True}}]})
    await api.call("POST", f"/connect/v1/flows/{flow['id']}/publish", expect=201)
    execution = await api.call("POST", f"/connect/v1/flows/{flow['id']}/test", expect=201, json={"n": 1})
    schedule, spare_schedule = [await api.call("POST", f"/connect/v1/flows/{flow['id']}/schedules", expect=201, json={"cron": "0 9 * * 1"}) for _ in range(2)]
    spare_flow = await api.call("POST", "/connect/v1/flows", expect=201, json={"name": "Spare"})
    templates = await api.call("GET", "/connect/v1/flow-templates", expect=200)
    return {
        "connection": connected["connectionId"],
        "flow": flow["id"],
        "execution": execution["id"],
        "schedule": schedule["id"],
        "template": templates[0]["slug"],
        "spare_flow": spare_flow["id"],
        "spare_schedule": spare_schedule["id"],
    }


def _parameters(provider: str, seeded: dict[str, str]) -> tuple[dict[str, str], list[Operations]]:
    """The path parameters that name seeded things (a template's ``slug`` for the template routes,
    the table's elsewhere; the spare flow and schedule for their deletes)."""
    values = {
        "path.providerType": provider,
        "path.type": provider,
        "path.slug": "people",
        "path.id": seeded["connection"],
        "path.connectionId": seeded["connection"],
        "path.flowId": seeded["flow"],
        "path.executionId": seeded["execution"],
        "path.scheduleId": seeded["schedule"],
        "path.version": "1",
    }
    operations = [
        Operations('include-path-regex = "^/connect/v1/flow-templates/"', {"path.slug": seeded["template"]}),
        Operations('include-operation-id = "delete_delete_flow"', {"path.flowId": seeded["spare_flow"]}),
        Operations('include-operation-id = "delete_delete_schedule"', {"path.scheduleId": seeded["spare_schedule"]}),
    ]
    return values, operations


@pytest.mark.timeout(BUDGET_SECONDS + 60)
async def test_answers_match_the_document(live_api, conformance):
    await conformance(PATHS, *_parameters(live_api.provider, await _seed(live_api)), budget=BUDGET_SECONDS, max_examples=MAX_EXAMPLES)
