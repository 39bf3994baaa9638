"""Templates (spec 4.9, 2.6): the system set, listing, cloning into a bound draft with the monthly
cap, publish-as-template visibility, and a flow from template to replay."""

from __future__ import annotations

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import template_review
from patchbay.core.flows.checks import static_problems
from patchbay.core.flows.engine import validate_steps
from patchbay.core.flows.templates import system_templates
from patchbay.core.flows.testing import drain
from patchbay.core.flows.triggers import fire_matching_triggers
from patchbay.core.plugins.registry import PluginError
from patchbay.core.tables.service import create_table
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection


def test_the_system_templates_are_valid_flows(make_app):
    app = make_app()
    templates = system_templates(app[SERVICES].registry)
    assert len(templates) >= 12 and len({t["slug"] for t in templates}) == len(templates)
    assert {app[SERVICES].registry.provider_pack[t["trigger"]["providerType"]] for t in templates} >= {"meta", "hubspot", "stripe", "slack"}
    for template in templates:
        validate_steps(app[SERVICES].registry, template["steps"])
        assert static_problems(app[SERVICES].registry, template["steps"]) == [], template["slug"]
        trigger = template["trigger"]
        assert trigger["triggerName"] in (app[SERVICES].registry.get("triggers", trigger["providerType"]) or {}), template["slug"]
        for step in template["steps"]:
            if step["type"] == "action":
                assert step["action"] in app[SERVICES].registry.get("actions", step["provider"]), template["slug"]


@pytest.mark.both_databases
async def test_list_get_and_clone_with_the_monthly_cap(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    listed = await (await flows_client.get("/connect/v1/flow-templates", headers=h)).json()
    assert len(listed) >= 12 and all(t["isSystem"] and t["visibility"] == "public" for t in listed)
    assert {"slug", "category", "cloneCount", "trigger", "stepCount", "description"} <= set(listed[0])
    leads = await (await flows_client.get("/connect/v1/flow-templates?category=lead-management", headers=h)).json()
    assert leads and {t["category"] for t in leads} == {"lead-management"}
    slug = "meta-lead-to-hubspot-contact"
    template = await (await flows_client.get(f"/connect/v1/flow-templates/{slug}", headers=h)).json()
    assert template["stepCount"] == len(template["steps"]) == 3
    assert (await flows_client.get("/connect/v1/flow-templates/nope", headers=h)).status == 404

    missing = await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={}, headers=h)
    assert missing.status == 400 and "facebook" in (await missing.json())["message"]
    hubspot = await add_connection(app, ws, "hubspot")
    wrong = await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={"triggerConnectionId": hubspot}, headers=h)
    assert wrong.status == 400 and "facebook" in (await wrong.json())["message"]
    facebook = await add_connection(app, ws, "facebook", meta={"page_id": "p1"})
    cloned = await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={"triggerConnectionId": facebook, "name": "My leads"}, headers=h)
    assert cloned.status == 201
    flow = await cloned.json()
    assert flow["name"] == "My leads" and flow["status"] == "draft" and flow["templateSlug"] == slug
    assert flow["steps"][2]["connectionId"] == hubspot and flow["trigger"]["connectionId"] == facebook
    triggers = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/triggers", headers=h)).json()
    assert [(t["providerType"], t["triggerName"], t["connectionId"]) for t in triggers] == [("facebook", "leadgen", facebook)]
    for _ in range(2):
        assert (await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={}, headers=h)).status == 201
    capped = await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={}, headers=h)
    assert capped.status == 403 and (await capped.json())["message"].startswith("Plan limit exceeded for template_clones:")
    ranked = await (await flows_client.get("/connect/v1/flow-templates", headers=h)).json()
    assert ranked[0]["slug"] == slug and ranked[0]["cloneCount"] == 3
    starter = await create_workspace_with_key(app, name="S", plan="starter")
    await add_connection(app, starter["workspace_id"], "facebook")
    for _ in range(4):
        assert (await flows_client.post(f"/connect/v1/flow-templates/{slug}/clone", json={}, headers=starter["headers"])).status == 201


async def test_publish_as_template_visibility(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    hubspot = await add_connection(app, ws, "hubspot")
    steps = [
        {"id": "c", "type": "action", "provider": "hubspot", "action": "create_contact", "connectionId": hubspot, "inputs": {"email": "{{ trigger.email }}"}}
    ]
    flow = await (
        await flows_client.post(
            "/connect/v1/flows",
            json={"name": "Share me", "steps": steps, "trigger": {"providerType": "hubspot", "triggerName": "new_contact", "kind": "poll"}},
            headers=h,
        )
    ).json()
    bad = await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", json={"visibility": "everyone"}, headers=h)
    assert bad.status == 400
    private = await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", headers=h)
    assert private.status == 201
    template = await private.json()
    assert template["visibility"] == "private" and not template["isSystem"]
    assert template["steps"][0]["connectionId"] == "$connection:hubspot"  # never another tenant's connection id
    other = await create_workspace_with_key(app, name="Other")
    for viewer, visible in ((h, True), (other["headers"], False)):
        slugs = [t["slug"] for t in await (await flows_client.get("/connect/v1/flow-templates", headers=viewer)).json()]
        assert (template["slug"] in slugs) is visible
    pending = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", json={"visibility": "pending_review"}, headers=h)).json()
    assert pending["slug"] == template["slug"] and pending["visibility"] == "pending_review"
    assert (await flows_client.get(f"/connect/v1/flow-templates/{template['slug']}", headers=other["headers"])).status == 404
    asked = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", json={"visibility": "public"}, headers=h)).json()
    assert asked["visibility"] == "pending_review"  # public only after an operator's review
    assert (await flows_client.get(f"/connect/v1/flow-templates/{template['slug']}", headers=other["headers"])).status == 404
    async with app[SERVICES].db.transaction() as session:
        await template_review.decide(session, template["slug"], approve=True)
    assert (await flows_client.get(f"/connect/v1/flow-templates/{template['slug']}", headers=other["headers"])).status == 200
    their_hubspot = await add_connection(app, other["workspace_id"], "hubspot")
    clone = await (await flows_client.post(f"/connect/v1/flow-templates/{template['slug']}/clone", json={}, headers=other["headers"])).json()
    assert clone["steps"][0]["connectionId"] == their_hubspot
    no_rights = await create_workspace_with_key(app, name="N", permissions=["templates.view", "flows.write"])
    assert (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish-as-template", headers=no_rights["headers"])).status == 403


async def test_from_template_to_published_to_triggered_to_inspected_to_replayed(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    await add_connection(app, ws, "slack")
    flow = await (await flows_client.post("/connect/v1/flow-templates/slack-message-to-table/clone", json={}, headers=h)).json()

    async with app[SERVICES].db.transaction(tenant=ws) as session:
        await create_table(
            session,
            workspace_id=ws,
            name="Slack",
            slug="slack-messages",
            columns=[{"name": "channel", "type": "text"}, {"name": "user", "type": "text"}, {"name": "text", "type": "text"}],
        )
    assert (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    event = {"event": {"type": "message", "channel": "C1", "user": "U1", "text": "hello", "ts": "1700000000.1"}}
    async with app[SERVICES].db.transaction() as session:
        assert (
            await fire_matching_triggers(
                app[SERVICES], session, workspace_id=ws, provider_type="slack", event_type="message", payload=event, source="webhook", dedupe="e1"
            )
            == 1
        )
    await drain(app[SERVICES])
    executions = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/executions", headers=h)).json()
    (execution,) = executions["data"]
    assert execution["status"] == "completed" and execution["triggerSource"] == "webhook"
    steps = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/executions/{execution['id']}/steps", headers=h)).json()
    assert steps[0]["output"]["external_key"] == "1700000000.1" and steps[0]["output"]["data"]["text"] == "hello"
    replay = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/executions/{execution['id']}/replay", headers=h)).json()
    await drain(app[SERVICES])
    replayed = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/executions/{replay['id']}", headers=h)).json()
    assert replayed["status"] == "completed" and replayed["triggerPayload"] == event and replayed["steps"][0]["output"]["external_key"] == "1700000000.1"


def test_a_packs_templates_go_with_the_pack():
    """Templates come from the packs (``register_flow_templates``); one is offered only while every
    provider it uses is installed, and a slug two plugins register is an error naming both."""
    from patchbay import flow_template, hookimpl
    from patchbay.core.plugins.manager import create_plugin_manager
    from patchbay.core.plugins.registry import load_registry

    offered = {t["slug"] for t in system_templates(load_registry(create_plugin_manager()))}
    without_hubspot = {t["slug"] for t in system_templates(load_registry(create_plugin_manager(disable=["hubspot"])))}
    assert {"hubspot-contact-to-mailchimp", "meta-lead-to-hubspot-contact", "stripe-customer-to-hubspot"} <= offered
    assert offered - without_hubspot == {
        "hubspot-contact-to-mailchimp",
        "hubspot-contact-to-airtable",
        "meta-lead-to-hubspot-contact",
        "stripe-customer-to-hubspot",
    }

    class Copycat:
        @hookimpl
        def register_flow_templates(self, register):
            register("stripe-charge-to-slack", flow_template("stripe-charge-to-slack", "Mine", "payments", "", ("stripe", "new_charge", "poll"), []))

    with pytest.raises(PluginError, match="flow_templates 'stripe-charge-to-slack' is already registered by plugin 'stripe'"):
        load_registry(create_plugin_manager([Copycat()]))
