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


@pytest.mark.parametrize(
    "raw",
    [
        b'{"path": "/a"}',
        b'{"path": "/a", "method": "post", "body": {"n": 1.5, "e": 1e3, "big": 123456789012345678901234567890, "t": true, "z": null, "l": [1, "x", {}]}}',
        '{"path": "/caf\u00e9", "body": "pl\u00e4in \u2713 text", "headers": {"X-A": 1, "X-B": "b"}, "query": {"q": [1, 2]}}'.encode(),
        b'{"path": "/a", "path": "/b", "params": {"p": 1}, "unknown": 5}',
        b' \n{"path": "/a", "body": -0.0} \n',
    ],
)
def test_the_envelope_read_in_one_pass_is_the_one_read_body_makes(raw):
    from patchbay.core.http.bodies import adapter_of, parse_json, structure
    from patchbay.core.proxy.api_models import ProxyEnvelope

    assert adapter_of(ProxyEnvelope).validate_json(raw, strict=True) == structure(parse_json(raw), ProxyEnvelope)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"path": "/a\\u0000"}', "NUL"),
        (b'{"path": "/a", "body": "\\ud800"}', "surrogate"),
        (b'{"path": "/a", "body": NaN}', None),  # pydantic's parser refuses NaN, json.loads takes it: read_body's way, as before
        (b"\xef\xbb\xbf" + b'{"path": "/a"}', None),  # a byte order mark: likewise
    ],
)
async def test_an_envelope_the_one_pass_does_not_take_is_read_as_before(api, ws, fake, raw, message):
    connection_id = await _connect(api, ws)
    headers = {**ws["headers"], "x-connection-id": connection_id, "Content-Type": "application/json"}
    response = await api.post("/connect/v1/proxy/fakekey", data=raw, headers=headers)
    if message is None:
        assert response.status == 200, await response.text()
        assert fake.api_calls[-1]["path"].endswith("/a")
    else:
        assert response.status == 400 and message in (await response.json())["message"]
