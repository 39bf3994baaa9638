"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "salesforce-lead-to-slack",
        "New Salesforce lead to a Slack message",
        "notifications",
        "Post each new Salesforce lead to Slack.",
        ("salesforce", "new_lead", "poll"),
        [
            action_step(
                "notify",
                "slack",
                "send_message",
                {"channel": "#leads", "text": "New Salesforce lead: {{ trigger.FirstName }} {{ trigger.LastName }} ({{ trigger.Company }})"},
            )
        ],
    ),
]
