"""The catalog over HTTP: GET /connect/v1/providers lists every provider with the fields of spec 2.1,
filters by category, and answers Meta's definition for facebook."""

from patchbay.core.appkeys import REGISTRY

SPEC_FIELDS = {"name", "displayName", "category", "isAvailable", "requiresOAuth", "capabilities"}


async def test_list_has_every_provider_with_the_spec_fields(client, workspace):
    response = await client.get("/connect/v1/providers", headers=workspace["headers"])
    assert response.status == 200
    body = await response.json()
    assert len(body) >= 220
    assert [item["name"] for item in body] == sorted(client.server.app[REGISTRY].providers)
    for item in body:
        assert SPEC_FIELDS <= set(item)
        assert item["requiresOAuth"] == ("oauth" in item["capabilities"])
    hubspot = next(item for item in body if item["name"] == "hubspot")
    assert hubspot["category"] == "crm" and hubspot["requiresOAuth"] is True
    assert set(hubspot["capabilities"]) == {"oauth", "proxy", "webhook_receive"}


async def test_facebook_answers_meta_lead_ads(client, workspace):
    response = await client.get("/connect/v1/providers/facebook", headers=workspace["headers"])
    assert response.status == 200
    meta = await response.json()
    assert meta["name"] == "facebook" and meta["displayName"] == "Meta Lead Ads"
    assert meta["requiresOAuth"] is True and meta["isAvailable"] is True
    assert meta["capabilities"] == ["oauth", "proxy", "webhook_receive", "lead_sync"]
    assert "leads_retrieval" in meta["scopes"]


async def test_category_filter(client, workspace):
    response = await client.get("/connect/v1/providers", params={"category": "crm"}, headers=workspace["headers"])
    crms = await response.json()
    names = {item["name"] for item in crms}
    assert {"hubspot", "salesforce", "pipedrive", "zoho-crm"} <= names and "stripe" not in names
    assert all("crm" in item["categories"] for item in crms)
    ads = await (await client.get("/connect/v1/providers", params={"category": "ads"}, headers=workspace["headers"])).json()
    assert {"facebook", "google-ads"} <= {item["name"] for item in ads}


async def test_an_unknown_provider_is_404_and_the_list_needs_credentials(client, workspace):
    response = await client.get("/connect/v1/providers/nope", headers=workspace["headers"])
    assert response.status == 404
    assert (await response.json())["message"] == "Provider not found: nope"
    assert (await client.get("/connect/v1/providers")).status == 401
