"""Refusals that a setting would allow name the setting, over HTTP: the outbound guard's https and
private-address rules (``allow_insecure_targets``) and the request body limits."""

import gzip

from patchbay.core.testing import create_workspace_with_key

INSECURE = (
    "outbound calls go only to https and public addresses unless the deployment sets `allow_insecure_targets = true` "
    "(PATCHBAY_ALLOW_INSECURE_TARGETS=true, `patchbay serve --allow-insecure-targets`; for development only)"
)


async def test_http_and_private_targets_name_allow_insecure_targets(make_app, aiohttp_client):
    app = make_app(allow_insecure_targets=False)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    for url, why in (("http://hooks.example.com/x", "must use https"), ("https://10.0.0.8/hook", "points at a private address")):
        response = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": url}, headers=ws["headers"])
        assert response.status == 400
        assert (await response.json())["message"] == f"Validation failed: url: {url!r} {why}: {INSECURE}"


async def test_body_limits_name_their_setting(make_app, aiohttp_client):
    app = make_app(max_unauthenticated_body_bytes=1000, max_body_bytes=2000)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    anonymous = await client.post("/webhook/facebook", data=b"x" * 1500)
    assert anonymous.status == 413
    assert (await anonymous.json())["message"] == (
        "Request body is larger than 1000 bytes: the limit for a caller without a valid credential is the "
        "`max_unauthenticated_body_bytes` setting (PATCHBAY_MAX_UNAUTHENTICATED_BODY_BYTES)"
    )
    authenticated = await client.post("/connect/v1/webhooks/facebook/subscribe", data=b"x" * 2500, headers=ws["headers"])
    assert authenticated.status == 413
    assert (await authenticated.json())["message"] == (
        "Request body is larger than 2000 bytes: the limit for a caller with a valid credential is the `max_body_bytes` setting (PATCHBAY_MAX_BODY_BYTES)"
    )
    # a compressed body is only found too large while it is read: aiohttp's own 413, in the same words
    inflated = await client.post(
        "/connect/v1/webhooks/facebook/subscribe",
        data=gzip.compress(b'{"url": "' + b"a" * 5000 + b'"}'),
        headers={**ws["headers"], "Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert inflated.status == 413
    assert (await inflated.json())["message"].endswith("the `max_body_bytes` setting (PATCHBAY_MAX_BODY_BYTES)")
