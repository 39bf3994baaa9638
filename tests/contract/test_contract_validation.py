"""One validation path: bodies are validated by pydantic against the dataclasses ``/openapi.json``
publishes (``core.http.bodies``), in strict mode, so a value is taken only as JSON gave it, and a
refusal is a 400 naming the field."""

from __future__ import annotations

import pytest

from patchbay.core.http.bodies import structure
from patchbay.core.http.errors import ApiError

STEPS = [{"id": "t", "type": "transform", "output": {"v": 1}}]


async def _published_flow(client, headers) -> dict:
    created = await client.post("/connect/v1/flows", json={"name": "F", "steps": STEPS}, headers=headers)
    assert created.status == 201, await created.text()
    flow = await created.json()
    published = await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=headers)
    assert published.status in (200, 201), await published.text()
    return flow


async def test_toggle_refuses_a_string_for_is_active_and_leaves_the_flow_alone(client, workspace):
    headers = workspace["headers"]
    flow = await _published_flow(client, headers)
    response = await client.patch(f"/connect/v1/flows/{flow['id']}/toggle", json={"isActive": "yes"}, headers=headers)
    assert response.status == 400
    assert (await response.json()) == {"statusCode": 400, "message": "Validation failed: isActive must be true or false"}
    after = await (await client.get(f"/connect/v1/flows/{flow['id']}", headers=headers)).json()
    assert after["isActive"] is True


async def test_toggle_with_a_boolean_sets_the_state(client, workspace):
    headers = workspace["headers"]
    flow = await _published_flow(client, headers)
    response = await client.patch(f"/connect/v1/flows/{flow['id']}/toggle", json={"isActive": False}, headers=headers)
    assert response.status == 200 and (await response.json())["isActive"] is False


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"credentials": {"apiKey": 5}}, "Validation failed: credentials.apiKey must be a string"),
        ({"credentials": {"apiKey": "k", "apiSecret": ["s"]}}, "Validation failed: credentials.apiSecret must be a string"),
        ({"credentials": "k"}, "Validation failed: credentials must be an object"),
        ({"credentials": {"apiKey": "k"}, "metadata": "x"}, "Validation failed: metadata must be an object"),
    ],
)
async def test_connect_names_the_wrong_credential_type(client, workspace, body, message):
    response = await client.post("/connect/v1/providers/apify/connect", json=body, headers=workspace["headers"])
    assert response.status == 400
    assert (await response.json())["message"] == message


@pytest.mark.parametrize("path", ["/connect/v1/task-history?status=bogus", "/connect/v1/flows/any/executions?status=bogus", "/connect/v1/flows?status=bogus"])
async def test_an_unknown_execution_status_is_400(client, workspace, path):
    response = await client.get(path, headers=workspace["headers"])
    assert response.status == 400
    assert (await response.json())["message"].startswith("status must be one of")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"flag": 1}, "flag must be true or false"),
        ({"count": True}, "count must be an integer"),
        ({"name": 5}, "name must be a string"),
        ({"ratio": "1"}, "ratio must be a number"),
    ],
)
def test_the_converter_does_not_coerce(value, message):
    from dataclasses import dataclass

    @dataclass
    class Model:
        flag: bool = False
        count: int = 0
        name: str = ""
        ratio: float = 0.0

    with pytest.raises(ApiError) as raised:
        structure(value, Model)
    assert raised.value.message == f"Validation failed: {message}"
    assert structure({"ratio": 2}, Model).ratio == 2


@pytest.mark.parametrize(
    ("body", "error", "named"),
    [
        (
            {"client_name": "x", "redirect_uris": ["https://app.example.com/cb"], "logo_uri": ["https://x"]},
            "invalid_client_metadata",
            "logo_uri must be a string",
        ),
        ({"client_name": "x", "redirect_uris": "https://app.example.com/cb"}, "invalid_redirect_uri", "redirect_uris must be an array"),
        ({"client_name": 5, "redirect_uris": ["https://app.example.com/cb"]}, "invalid_client_metadata", "client_name must be a string"),
    ],
)
async def test_registration_checks_its_published_model_before_authlib(client, body, error, named):
    """A value of the wrong type is refused by the model in the protocol's words (authlib's own
    checks assume the types: a list for ``logo_uri`` crashed them)."""
    response = await client.post("/api/v1/oidc/register", json=body)
    answer = await response.json()
    assert response.status == 400 and answer["error"] == error and answer["error_description"] == named
