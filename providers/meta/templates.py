"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from typing import Any

from patchbay import action_step, flow_template


def _lead_fields() -> dict[str, Any]:
    # Meta lead forms deliver field_data as [{name, values: [...]}]; the webhook payload carries the
    # leadgen change, which the inbound pipeline enriches with the lead's fields when it can.
    return {
        "email": "{{ trigger.email | default(trigger.get('field_data', {}) | selectattr('name', 'equalto', 'email') | map(attribute='values') | first | default(['']) | first) }}",
        "name": "{{ trigger.full_name | default(trigger.name | default('')) }}",
        "phone": "{{ trigger.phone_number | default(trigger.phone | default('')) }}",
        "leadId": "{{ trigger.leadgen_id | default(trigger.id | default('')) }}",
    }


#: the lead's fields out of a Meta leadgen payload (the inbound pipeline enriches it with the lead)
LEAD = {"id": "lead", "type": "transform", "output": _lead_fields()}
HAS_EMAIL = {"id": "has_email", "type": "filter", "condition": "steps.lead.output.email != ''"}


TEMPLATES = [
    flow_template(
        "meta-lead-to-hubspot-contact",
        "Meta lead to HubSpot contact",
        "lead-management",
        "Create a HubSpot contact from every new Facebook / Instagram lead form submission.",
        ("facebook", "leadgen", "webhook"),
        [
            LEAD,
            HAS_EMAIL,
            action_step(
                "contact",
                "hubspot",
                "create_contact",
                {"email": "{{ steps.lead.output.email }}", "firstname": "{{ steps.lead.output.name }}", "phone": "{{ steps.lead.output.phone }}"},
            ),
        ],
    ),
    flow_template(
        "meta-lead-to-salesforce-lead",
        "Meta lead to Salesforce lead",
        "lead-management",
        "Create a Salesforce lead from every new Meta lead ad submission.",
        ("facebook", "leadgen", "webhook"),
        [
            LEAD,
            HAS_EMAIL,
            action_step(
                "sf_lead",
                "salesforce",
                "create_lead",
                {
                    "LastName": "{{ steps.lead.output.name or 'Unknown' }}",
                    "Email": "{{ steps.lead.output.email }}",
                    "Company": "Meta lead ads",
                    "LeadSource": "Facebook",
                },
            ),
        ],
    ),
    flow_template(
        "meta-lead-to-pipedrive-person",
        "Meta lead to Pipedrive person",
        "lead-management",
        "Add every new Meta lead to Pipedrive as a person.",
        ("facebook", "leadgen", "webhook"),
        [
            LEAD,
            action_step(
                "person",
                "pipedrive",
                "create_person",
                {
                    "name": "{{ steps.lead.output.name or steps.lead.output.email }}",
                    "email": "{{ steps.lead.output.email }}",
                    "phone": "{{ steps.lead.output.phone }}",
                },
            ),
        ],
    ),
    flow_template(
        "meta-lead-to-slack",
        "Meta lead to a Slack message",
        "notifications",
        "Post a message to a Slack channel for every new Meta lead.",
        ("facebook", "leadgen", "webhook"),
        [
            LEAD,
            action_step(
                "notify", "slack", "send_message", {"channel": "#leads", "text": "New lead: {{ steps.lead.output.name }} <{{ steps.lead.output.email }}>"}
            ),
        ],
    ),
    flow_template(
        "meta-lead-to-google-sheet",
        "Meta lead to a Google Sheets row",
        "lead-management",
        "Append every new Meta lead to a spreadsheet.",
        ("facebook", "leadgen", "webhook"),
        [
            LEAD,
            action_step(
                "row",
                "google-sheet",
                "append_row",
                {
                    "spreadsheetId": "",
                    "range": "Leads!A:D",
                    "values": [
                        "{{ steps.lead.output.leadId }}",
                        "{{ steps.lead.output.name }}",
                        "{{ steps.lead.output.email }}",
                        "{{ steps.lead.output.phone }}",
                    ],
                },
            ),
        ],
    ),
]
