"""``POST /webhook/<provider>`` tells an unknown provider from one that receives no webhooks, and a
provider with no webhook secret configured names the setting, over HTTP."""


async def test_unknown_provider_and_provider_without_webhooks_read_differently(client):
    unknown = await client.post("/webhook/nosuchprovider", json={})
    assert unknown.status == 404
    assert await unknown.json() == {"statusCode": 404, "message": "Provider not found: nosuchprovider"}
    no_webhooks = await client.post("/webhook/stripe-api-key", json={})
    assert no_webhooks.status == 404
    assert await no_webhooks.json() == {
        "statusCode": 404,
        "message": "Provider stripe-api-key receives no webhooks: its pack registers no webhook handler, so nothing is accepted at /webhook/stripe-api-key",
    }
    handshake = await client.get("/webhook/stripe-api-key", params={"hub.mode": "subscribe"})
    assert handshake.status == 404 and "receives no webhooks" in (await handshake.json())["message"]


async def test_a_provider_without_a_webhook_secret_names_the_setting(client):
    response = await client.post("/webhook/facebook", json={"object": "page", "entry": []})
    assert response.status == 401
    assert await response.json() == {
        "statusCode": 401,
        "message": "Unauthorized: no webhook secret is configured for facebook, so no event can be verified; "
        "the operator sets `webhook_secret` in `[providers.facebook]` of the settings file",
    }
