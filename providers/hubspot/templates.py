"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "hubspot-contact-to-mailchimp",
        "New HubSpot contact to Mailchimp audience",
        "marketing",
        "Subscribe every new HubSpot contact with an email address to a Mailchimp audience.",
        ("hubspot", "new_contact", "poll"),
        [
            {"id": "has_email", "type": "filter", "condition": "trigger.properties.email"},
            action_step(
                "subscribe",
                "mailchimp",
                "add_member",
                {
                    "listId": "",
                    "email": "{{ trigger.properties.email }}",
                    "status": "subscribed",
                    "mergeFields": {"FNAME": "{{ trigger.properties.firstname | default('') }}"},
                },
            ),
        ],
    ),
    flow_template(
        "hubspot-contact-to-airtable",
        "New HubSpot contact to an Airtable record",
        "crm-sync",
        "Copy every new HubSpot contact into an Airtable table.",
        ("hubspot", "new_contact", "poll"),
        [
            action_step(
                "record",
                "airtable",
                "create_record",
                {"baseId": "", "table": "Contacts", "fields": {"Email": "{{ trigger.properties.email }}", "HubSpot ID": "{{ trigger.id }}"}},
            )
        ],
    ),
]
