"""A declared action over ``POST /api/execute`` against a real local provider API: bad inputs answer
400 before any call, and the provider's 404, 409 and 429 (with its Retry-After) answer the same,
its other failures 502."""

from __future__ import annotations

import pytest


@pytest.fixture
async def harness(pack_harness):
    return await pack_harness("github")


async def execute(harness, inputs):
    body = {"connectionId": harness.connection_id, "action": "github.create_issue", "inputs": inputs}
    return await harness.http.post("/api/execute", json=body, headers=harness.workspace["headers"])


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"owner": "octo", "repo": "hello"}, "inputs.title is required"),
        ({"owner": "octo", "repo": "hello", "title": 5}, "inputs.title: 5 is not of type 'string'"),
        ({"owner": "octo", "repo": "hello", "title": "Bug", "labels": ["ok", 7]}, "inputs.labels.1: 7 is not of type 'string'"),
    ],
)
async def test_bad_inputs_answer_400_naming_the_field(harness, inputs, message):
    response = await execute(harness, inputs)
    assert response.status == 400 and await response.json() == {"statusCode": 400, "message": message}
    assert harness.fake.seen == []


@pytest.mark.parametrize(
    ("status", "headers", "expected", "expected_headers"),
    [
        (404, {}, 404, {}),
        (409, {}, 409, {}),
        (429, {"Retry-After": "17"}, 429, {"Retry-After": "17"}),
        (422, {}, 502, {}),
    ],
)
async def test_the_providers_refusal_answers_its_own_status(harness, status, headers, expected, expected_headers):
    harness.fake.routes[("POST", "/repos/octo/hello/issues")] = (status, {"message": "refused here"}, headers)
    response = await execute(harness, {"owner": "octo", "repo": "hello", "title": "Bug"})
    assert response.status == expected, await response.text()
    body = await response.json()
    assert body["statusCode"] == expected and f"POST /repos/octo/hello/issues answered {status}" in body["message"] and "refused here" in body["message"]
    for name, value in expected_headers.items():
        assert response.headers[name] == value
    assert len(harness.fake.seen) == 1
