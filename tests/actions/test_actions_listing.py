"""What a provider offers, over HTTP: ``GET /connect/v1/providers/{type}`` lists its actions (input
and output schemas, docs links) and triggers (kind, event types, config schema); the action
listings page without changing their documented shapes, and ``/openapi.json`` publishes the fields."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import patchbay.providers

GITHUB_FILE = Path(patchbay.providers.__file__).parent / "github" / "actions.toml"


async def get_json(client, path, headers, **params):
    response = await client.get(path, params=params, headers=headers)
    assert response.status == 200, await response.text()
    return response, await response.json()


async def test_a_declared_providers_detail_lists_its_actions_and_triggers_with_schemas(client, workspace):
    declared = tomllib.loads(GITHUB_FILE.read_text())
    _, detail = await get_json(client, "/connect/v1/providers/github", workspace["headers"])
    assert detail["name"] == "github" and detail["connect"]["method"] == "oauth"  # the documented fields stay
    actions = {action["name"]: action for action in detail["actions"]}
    assert [a["name"] for a in detail["actions"]] == sorted(a["name"] for a in declared["actions"])
    for expected in declared["actions"]:
        action = actions[expected["name"]]
        assert (action["id"], action["displayName"], action["description"]) == (
            f"github.{expected['name']}",
            expected["title"],
            expected.get("description", ""),
        )
        assert action["docsUrl"] == expected["docs"] and action["docsUrl"].startswith("https://docs.github.com/")
        assert action["inputs"] == expected["input"]
        assert action["output"] == expected.get("output", {}).get("schema")
    assert actions["create_issue"]["output"] == {"type": "object", "required": ["id", "number"]}
    assert actions["get_issue"]["output"] is None
    assert [t["name"] for t in detail["triggers"]] == sorted(t["name"] for t in declared["triggers"])
    [trigger] = [t for t in detail["triggers"] if t["name"] == "new_issue"]
    [expected_trigger] = [t for t in declared["triggers"] if t["name"] == "new_issue"]
    assert trigger["kind"] == "poll" and trigger["eventTypes"] == []
    assert trigger["config"] == expected_trigger["config"] and trigger["docsUrl"] == expected_trigger["docs"]


async def test_a_webhook_trigger_shows_its_event_types(client, workspace):
    _, detail = await get_json(client, "/connect/v1/providers/box", workspace["headers"])
    triggers = {t["name"]: t for t in detail["triggers"]}
    assert triggers["file_uploaded"]["kind"] == "webhook" and triggers["file_uploaded"]["eventTypes"] == ["FILE.UPLOADED"]
    assert triggers["file_uploaded"]["docsUrl"] == "https://developer.box.com/reference/resources/webhook-invocation/"


async def test_a_provider_without_actions_shows_empty_lists(client, workspace):
    _, detail = await get_json(client, "/connect/v1/providers/1password-events", workspace["headers"])
    assert detail["actions"] == [] and detail["triggers"] == []
    assert "connect" in detail


async def test_the_registry_pages_through_every_action_once(client, workspace):
    headers = workspace["headers"]
    _, catalog = await get_json(client, "/connect/v1/providers/actions/catalog", headers)
    expected = sorted(f"{entry['name']}.{action}" for entry in catalog for action in entry["actions"])
    assert len(expected) > 100  # hundreds: more than the largest page
    seen, page = [], 1
    while True:
        _, body = await get_json(client, "/api/registry/actions", headers, page=str(page), limit="40")
        assert (body["page"], body["limit"], body["total"]) == (page, 40, len(expected))
        if not body["data"]:
            break
        assert len(body["data"]) <= 40
        seen += [action["id"] for action in body["data"]]
        page += 1
    assert sorted(seen) == expected and len(seen) == len(set(seen))
    _, first = await get_json(client, "/api/registry/actions", headers, page="1")  # the default page size: 20
    assert (first["page"], first["limit"], len(first["data"])) == (1, 20, 20)
    _, everything = await get_json(client, "/api/registry/actions", headers)  # no paging asked: every action, as before
    assert sorted(action["id"] for action in everything["data"]) == expected and everything.get("page") is None
    _, slack = await get_json(client, "/api/registry/actions", headers, appId="slack")
    assert len(slack["data"]) > 0 and {a["provider"] for a in slack["data"]} == {"slack"}


async def test_the_catalog_and_a_providers_actions_keep_their_arrays_and_page_on_request(client, workspace):
    headers = workspace["headers"]
    response, everything = await get_json(client, "/connect/v1/providers/actions/catalog", headers)
    assert isinstance(everything, list) and int(response.headers["X-Total-Count"]) == len(everything) > 5
    pages = [(await get_json(client, "/connect/v1/providers/actions/catalog", headers, page=str(n), limit="5"))[1] for n in range(1, len(everything) // 5 + 2)]
    assert [entry for page in pages for entry in page] == everything
    response, actions = await get_json(client, "/connect/v1/providers/github/actions", headers)
    assert int(response.headers["X-Total-Count"]) == len(actions) > 6
    _, second = await get_json(client, "/connect/v1/providers/github/actions", headers, page="2", limit="3")
    assert second == actions[3:6]


@pytest.mark.parametrize("path", ["/api/registry/actions", "/connect/v1/providers/actions/catalog", "/connect/v1/providers/github/actions"])
@pytest.mark.parametrize(("params", "field"), [({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"page": "x"}, "page")])
async def test_bad_paging_is_400_naming_the_field(client, workspace, path, params, field):
    response = await client.get(path, params=params, headers=workspace["headers"])
    assert response.status == 400
    body = await response.json()
    assert body["statusCode"] == 400 and field in body["message"]


async def test_openapi_publishes_the_new_fields(client):
    document = await (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    assert {"actions", "triggers"} <= set(schemas["ProviderDetail"]["properties"])
    assert {"docsUrl", "output", "inputs"} <= set(schemas["ActionOption"]["properties"])
    assert {"kind", "eventTypes", "config", "docsUrl"} <= set(schemas["ProviderTrigger"]["properties"])
    assert {"data", "page", "limit", "total"} <= set(schemas["ActionList"]["properties"])
    parameters = {p["name"] for p in document["paths"]["/api/registry/actions"]["get"]["parameters"]}
    assert {"page", "limit", "appId"} <= parameters
