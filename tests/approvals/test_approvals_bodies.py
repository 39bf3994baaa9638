"""The approval routes read their bodies with models: a field of the wrong type, null or unknown
answers 400 naming it, and a refused change changes nothing."""

from __future__ import annotations

from patchbay.core.testing import create_workspace_with_key


async def test_policy_and_decision_bodies_of_the_wrong_type_are_400_naming_the_field(aiohttp_client, make_app, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    for body, message in (
        ({"providers": "hubspot"}, "providers must be a list of strings"),
        ({"categories": {"crm": True}}, "categories must be a list of strings"),
        ({"approverUserIds": [7]}, "approverUserIds"),
        ({"approverRoles": None}, "approverRoles must be a list of strings"),
        ({"enabled": "yes"}, "enabled must be a boolean"),
        ({"enabled": None}, "enabled must be a boolean"),
        ({"colour": "red"}, "unknown field(s) colour"),
        ({"approverRoles": ["owner"]}, "approverRoles"),
    ):
        response = await client.patch("/connect/v1/approvals/policy", json=body, headers=ws["headers"])
        assert response.status == 400 and message in (await response.json())["message"], (body, await response.text())
    policy = await (await client.get("/connect/v1/approvals/policy", headers=ws["headers"])).json()
    assert policy["providers"] == [] and policy["enabled"] is False and policy["updatedAt"] is None
    changed = await client.patch("/connect/v1/approvals/policy", json={"enabled": True, "providers": ["hubspot"]}, headers=ws["headers"])
    assert changed.status == 200 and (await changed.json())["providers"] == ["hubspot"]
    for verb in ("approve", "deny"):
        refused = await client.post(f"/connect/v1/approvals/unknown/{verb}", json={"note": 5}, headers=ws["headers"])
        assert refused.status == 400 and "note must be a string" in (await refused.json())["message"]
        assert (await client.post(f"/connect/v1/approvals/unknown/{verb}", json={"note": "ok"}, headers=ws["headers"])).status == 404
