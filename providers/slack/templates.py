"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import flow_template

TEMPLATES = [
    flow_template(
        "slack-message-to-table",
        "Slack message to a patchbay table",
        "productivity",
        "Keep every message of a Slack channel in a patchbay table, keyed by its timestamp.",
        ("slack", "message", "webhook"),
        [
            {
                "id": "upsert",
                "type": "table.upsert",
                "table": "slack-messages",
                "externalKey": "{{ trigger.event.ts }}",
                "data": {"channel": "{{ trigger.event.channel }}", "user": "{{ trigger.event.user }}", "text": "{{ trigger.event.text }}"},
            }
        ],
    ),
]
