"""The catalog over HTTP: GET /connect/v1/providers lists every provider with the fields of spec 2.1,
filters by category, and answers Meta's definition for facebook."""

from patchbay.core.appkeys import SERVICES

SPEC_FIELDS = {"name", "displayName", "category", "isAvailable", "requiresOAuth", "capabilities"}


async def test_list_has_every_provider_with_the_spec_fields(client, workspace):
    response = await client.get("/connect/v1/providers", headers=workspace["headers"])
    assert response.status == 200
    body = await response.json()
    assert len(body) >= 220
    assert [item["name"] for item in body] == sorted(client.server.app[SERVICES].registry.providers)
    for item in body:
        assert SPEC_FIELDS <= set(item)
        assert item["requiresOAuth"] == ("oauth" in item["capabilities"])
    hubspot = next(item for item in body if item["name"] == "hubspot")
    assert hubspot["category"] == "crm" and hubspot["requiresOAuth"] is True
    # the capabilities are derived from HubSpot's registered actions, triggers, CRM mapper and records
    assert set(hubspot["capabilities"]) == {"oauth", "proxy", "webhook_receive", "actions", "triggers", "unified_crm", "records"}


async def test_facebook_answers_meta_lead_ads(client, workspace):
    response = await client.get("/connect/v1/providers/facebook", headers=workspace["headers"])
    assert response.status == 200
    meta = await response.json()
    assert meta["name"] == "facebook" and meta["displayName"] == "Meta Lead Ads"
    assert meta["requiresOAuth"] is True and meta["isAvailable"] is True
    assert meta["capabilities"] == ["oauth", "proxy", "webhook_receive", "lead_sync", "actions", "triggers"]
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


async def test_search_capability_and_paging(client, workspace):
    headers = workspace["headers"]

    async def names(**params):
        response = await client.get("/connect/v1/providers", params=params, headers=headers)
        assert response.status == 200
        return [item["name"] for item in await response.json()], int(response.headers["X-Total-Count"])

    found, total = await names(search="HubSp")
    assert "hubspot" in found and total == len(found) and all("hubsp" in n or "hubsp" in n.lower() for n in found)
    by_display, _ = await names(search="meta lead")
    assert by_display == ["facebook"]
    hooks, _ = await names(capability="webhook_receive")
    assert "hubspot" in hooks and "openai" not in hooks
    everything, total = await names()
    first, page_total = await names(limit="5")
    second, _ = await names(limit="5", page="2")
    assert (first, second, page_total) == (everything[:5], everything[5:10], total)
    assert (await names(authMode="basic"))[0] and all(n in everything for n in (await names(authMode="basic"))[0])


async def test_bad_paging_is_400_naming_the_field(client, workspace):
    for params, field in (({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"page": "x"}, "page")):
        response = await client.get("/connect/v1/providers", params=params, headers=workspace["headers"])
        assert response.status == 400
        assert field in (await response.json())["message"]


async def test_detail_tells_what_connecting_takes(client, workspace):
    async def detail(name):
        response = await client.get(f"/connect/v1/providers/{name}", headers=workspace["headers"])
        assert response.status == 200
        return (await response.json())["connect"]

    posthog = await detail("posthog")  # API key with a subdomain
    assert posthog["method"] == "credentials"
    assert [(f["name"], f["label"], f["required"]) for f in posthog["credentials"]] == [
        ("apiKey", "Personal API key", True),
        ("apiSecret", "API secret", False),
    ]
    assert [{key: p[key] for key in ("name", "label", "required", "default")} for p in posthog["connectionParams"]] == [
        {"name": "subdomain", "label": "PostHog region", "required": True, "default": None}
    ]
    assert posthog["apiBaseUrl"].startswith("https://")
    zendesk = await detail("zendesk-api-key")  # basic auth
    assert [(f["label"], f["required"]) for f in zendesk["credentials"]] == [("Email address", True), ("API token", True)]
    github = await detail("github-pat")  # a parameter with a default
    assert github["connectionParams"][0]["required"] is False and github["connectionParams"][0]["default"] == "2022-11-28"
    hubspot = await detail("hubspot")
    assert hubspot["method"] == "oauth" and hubspot["credentials"] == [] and hubspot["scopes"]


async def test_detail_gives_base_url_docs_and_a_logo_that_serves(client, workspace):
    detail = await (await client.get("/connect/v1/providers/posthog", headers=workspace["headers"])).json()
    base = client.server.app[SERVICES].settings.public_base_url
    assert detail["connect"]["logoUrl"] == f"{base}/connect/v1/providers/posthog/logo.svg"
    assert "docsUrl" in detail["connect"] and detail["connect"]["apiBaseUrl"].startswith("https://")
    logo = await client.get("/connect/v1/providers/salesforce/logo.svg")  # public: an <img> sends no credentials
    assert logo.status == 200 and logo.content_type == "image/svg+xml"
    svg = await logo.text()  # no brand icon is shipped for Salesforce: its monogram
    assert svg.startswith("<svg") and ">S</text>" in svg and 'aria-label="Salesforce"' in svg
    missing = await client.get("/connect/v1/providers/nope/logo.svg")
    assert missing.status == 404 and (await missing.json())["message"] == "Provider not found: nope"
