"""The proxy's envelope is read through its request model (``core/proxy/api_models.py``): a field
of the wrong type is a 400 naming it, and nothing is sent to the provider; the document publishes
the envelope's schema and the provider's answer as any media."""

from __future__ import annotations

import pytest

from tests.proxy.test_proxy import _connect


@pytest.mark.parametrize(
    ("envelope", "message"),
    [
        ({"method": "GET"}, "path is required"),
        ({"path": 5}, "path must be a string"),
        ({"path": "/contacts", "method": 1}, "method must be a string"),
        ({"path": "/contacts", "method": "BREW"}, "method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"),
        ({"path": "/contacts", "headers": "X-A: 1"}, "headers must be an object"),
        ({"path": "/contacts", "query": ["a", "b"]}, "query must be an object"),
        ([{"path": "/contacts"}], "Request body must be a JSON object"),
    ],
)
async def test_a_malformed_envelope_is_400_naming_the_field_and_calls_nobody(api, ws, fake, envelope, message):
    connection_id = await _connect(api, ws)
    calls = len(fake.api_calls)
    response = await api.post("/connect/v1/proxy/fakekey", json=envelope, headers={**ws["headers"], "x-connection-id": connection_id})
    assert response.status == 400
    body = await response.json()
    assert body["statusCode"] == 400 and message in body["message"]
    assert len(fake.api_calls) == calls


async def test_the_document_gives_the_envelope_and_any_media_back(api):
    document = await (await api.get("/openapi.json")).json()
    envelope = document["paths"]["/connect/v1/proxy/{providerType}"]["post"]
    schema = envelope["requestBody"]["content"]["application/json"]["schema"]
    resolved = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
    assert resolved["required"] == ["path"] and {"method", "path", "body", "headers", "query"} <= set(resolved["properties"])
    assert "*/*" in envelope["responses"]["200"]["content"]
    passthrough = document["paths"]["/connect/v1/proxy/{providerType}/{path}"]["get"]
    assert "*/*" in passthrough["responses"]["200"]["content"]
