"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "pipedrive-deal-to-slack",
        "New Pipedrive deal to a Slack message",
        "notifications",
        "Tell the team in Slack about every new Pipedrive deal.",
        ("pipedrive", "new_deal", "poll"),
        [
            action_step(
                "notify", "slack", "send_message", {"channel": "#deals", "text": "New deal: {{ trigger.title }} ({{ trigger.value }} {{ trigger.currency }})"}
            )
        ],
    ),
]
