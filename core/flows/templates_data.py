"""The system flow templates (spec 2.6), seeded into ``flow_templates`` at start.

An action step's ``connectionId`` of ``$connection:<provider>`` is bound, when the template is
cloned, to the workspace's connection to that provider (the trigger's provider takes the clone's
``triggerConnectionId``).
"""

from __future__ import annotations

from typing import Any


def _lead_fields() -> dict[str, Any]:
    # Meta lead forms deliver field_data as [{name, values: [...]}]; the webhook payload carries the
    # leadgen change, which the inbound pipeline enriches with the lead's fields when it can.
    return {
        "email": "{{ trigger.email | default(trigger.get('field_data', {}) | selectattr('name', 'equalto', 'email') | map(attribute='values') | first | default(['']) | first) }}",
        "name": "{{ trigger.full_name | default(trigger.name | default('')) }}",
        "phone": "{{ trigger.phone_number | default(trigger.phone | default('')) }}",
        "leadId": "{{ trigger.leadgen_id | default(trigger.id | default('')) }}",
    }


def _t(slug: str, name: str, category: str, description: str, trigger: tuple[str, str, str], steps: list[dict[str, Any]]) -> dict[str, Any]:
    providers = sorted({s["connectionId"].split(":", 1)[1] for s in steps if str(s.get("connectionId", "")).startswith("$connection:")})
    return {
        "slug": slug, "name": name, "category": category, "description": description,
        "trigger": {"providerType": trigger[0], "triggerName": trigger[1], "kind": trigger[2]},
        "steps": steps, "providers": providers,
    }  # fmt: skip


def _action(step_id: str, provider: str, action: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"id": step_id, "type": "action", "provider": provider, "action": action, "connectionId": f"$connection:{provider}", "inputs": inputs}


LEAD = {"id": "lead", "type": "transform", "output": _lead_fields()}
HAS_EMAIL = {"id": "has_email", "type": "filter", "condition": "steps.lead.output.email != ''"}

SYSTEM_TEMPLATES: list[dict[str, Any]] = [
    _t("meta-lead-to-hubspot-contact", "Meta lead to HubSpot contact", "lead-management",
       "Create a HubSpot contact from every new Facebook / Instagram lead form submission.",
       ("facebook", "leadgen", "webhook"),
       [LEAD, HAS_EMAIL, _action("contact", "hubspot", "create_contact",
                                 {"email": "{{ steps.lead.output.email }}", "firstname": "{{ steps.lead.output.name }}", "phone": "{{ steps.lead.output.phone }}"})]),
    _t("meta-lead-to-salesforce-lead", "Meta lead to Salesforce lead", "lead-management",
       "Create a Salesforce lead from every new Meta lead ad submission.",
       ("facebook", "leadgen", "webhook"),
       [LEAD, HAS_EMAIL, _action("sf_lead", "salesforce", "create_lead",
                                 {"LastName": "{{ steps.lead.output.name or 'Unknown' }}", "Email": "{{ steps.lead.output.email }}", "Company": "Meta lead ads", "LeadSource": "Facebook"})]),
    _t("meta-lead-to-pipedrive-person", "Meta lead to Pipedrive person", "lead-management",
       "Add every new Meta lead to Pipedrive as a person.",
       ("facebook", "leadgen", "webhook"),
       [LEAD, _action("person", "pipedrive", "create_person", {"name": "{{ steps.lead.output.name or steps.lead.output.email }}", "email": "{{ steps.lead.output.email }}", "phone": "{{ steps.lead.output.phone }}"})]),
    _t("meta-lead-to-slack", "Meta lead to a Slack message", "notifications",
       "Post a message to a Slack channel for every new Meta lead.",
       ("facebook", "leadgen", "webhook"),
       [LEAD, _action("notify", "slack", "send_message", {"channel": "#leads", "text": "New lead: {{ steps.lead.output.name }} <{{ steps.lead.output.email }}>"})]),
    _t("meta-lead-to-google-sheet", "Meta lead to a Google Sheets row", "lead-management",
       "Append every new Meta lead to a spreadsheet.",
       ("facebook", "leadgen", "webhook"),
       [LEAD, _action("row", "google-sheet", "append_row", {"spreadsheetId": "", "range": "Leads!A:D",
                                                             "values": ["{{ steps.lead.output.leadId }}", "{{ steps.lead.output.name }}", "{{ steps.lead.output.email }}", "{{ steps.lead.output.phone }}"]})]),
    _t("sheet-row-to-slack", "New Google Sheets row to a Slack message", "notifications",
       "Post each new spreadsheet row to Slack.",
       ("google-sheet", "new_row", "poll"),
       [_action("notify", "slack", "send_message", {"channel": "#general", "text": "New row {{ trigger.rowNumber }}: {{ trigger['values'] | join(', ') }}"})]),
    _t("hubspot-contact-to-mailchimp", "New HubSpot contact to Mailchimp audience", "marketing",
       "Subscribe every new HubSpot contact with an email address to a Mailchimp audience.",
       ("hubspot", "new_contact", "poll"),
       [{"id": "has_email", "type": "filter", "condition": "trigger.properties.email"},
        _action("subscribe", "mailchimp", "add_member", {"listId": "", "email": "{{ trigger.properties.email }}", "status": "subscribed",
                                                          "mergeFields": {"FNAME": "{{ trigger.properties.firstname | default('') }}"}})]),
    _t("hubspot-contact-to-airtable", "New HubSpot contact to an Airtable record", "crm-sync",
       "Copy every new HubSpot contact into an Airtable table.",
       ("hubspot", "new_contact", "poll"),
       [_action("record", "airtable", "create_record", {"baseId": "", "table": "Contacts",
                                                         "fields": {"Email": "{{ trigger.properties.email }}", "HubSpot ID": "{{ trigger.id }}"}})]),
    _t("stripe-charge-to-slack", "Stripe payment to a Slack message", "payments",
       "Announce every successful Stripe charge in Slack.",
       ("stripe", "new_charge", "poll"),
       [{"id": "paid", "type": "filter", "condition": "trigger.status == 'succeeded'"},
        {"id": "amount", "type": "transform", "output": {"display": "{{ '%.2f' | format(trigger.amount / 100) }} {{ trigger.currency | upper }}"}},
        _action("notify", "slack", "send_message", {"channel": "#sales", "text": ":moneybag: {{ steps.amount.output.display }} from {{ trigger.billing_details.email | default('a customer') }}"})]),
    _t("stripe-customer-to-hubspot", "Stripe customer to HubSpot contact", "crm-sync",
       "Create a HubSpot contact for each new Stripe customer.",
       ("stripe", "new_customer", "poll"),
       [{"id": "has_email", "type": "filter", "condition": "trigger.email"},
        _action("contact", "hubspot", "create_contact", {"email": "{{ trigger.email }}", "firstname": "{{ trigger.name | default('') }}"})]),
    _t("pipedrive-deal-to-slack", "New Pipedrive deal to a Slack message", "notifications",
       "Tell the team in Slack about every new Pipedrive deal.",
       ("pipedrive", "new_deal", "poll"),
       [_action("notify", "slack", "send_message", {"channel": "#deals", "text": "New deal: {{ trigger.title }} ({{ trigger.value }} {{ trigger.currency }})"})]),
    _t("salesforce-lead-to-slack", "New Salesforce lead to a Slack message", "notifications",
       "Post each new Salesforce lead to Slack.",
       ("salesforce", "new_lead", "poll"),
       [_action("notify", "slack", "send_message", {"channel": "#leads", "text": "New Salesforce lead: {{ trigger.FirstName }} {{ trigger.LastName }} ({{ trigger.Company }})"})]),
    _t("gmail-to-notion", "Starred Gmail message to a Notion page", "productivity",
       "Save matching Gmail messages as pages in a Notion database.",
       ("google-mail", "new_email", "poll"),
       [_action("page", "notion", "create_page", {"databaseId": "", "title": "{{ trigger.subject | default('(no subject)') }}",
                                                  "properties": {}, "content": "From {{ trigger['from'] }}: {{ trigger.snippet }}"})]),
    _t("airtable-record-to-gmail", "New Airtable record to an email", "productivity",
       "Email a summary of each new Airtable record.",
       ("airtable", "new_record", "poll"),
       [_action("email", "google-mail", "send_email", {"to": "", "subject": "New record {{ trigger.id }}", "body": "{{ trigger.fields | tojson }}"})]),
    _t("mailchimp-subscriber-to-sheet", "New Mailchimp subscriber to a Google Sheets row", "marketing",
       "Log every new Mailchimp subscriber in a spreadsheet.",
       ("mailchimp", "new_subscriber", "poll"),
       [_action("row", "google-sheet", "append_row", {"spreadsheetId": "", "range": "Subscribers!A:C",
                                                       "values": ["{{ trigger.email_address }}", "{{ trigger.status }}", "{{ trigger.timestamp_opt | default('') }}"]})]),
    _t("slack-message-to-table", "Slack message to a patchbay table", "productivity",
       "Keep every message of a Slack channel in a patchbay table, keyed by its timestamp.",
       ("slack", "message", "webhook"),
       [{"id": "upsert", "type": "table.upsert", "table": "slack-messages", "externalKey": "{{ trigger.event.ts }}",
         "data": {"channel": "{{ trigger.event.channel }}", "user": "{{ trigger.event.user }}", "text": "{{ trigger.event.text }}"}}]),
]
