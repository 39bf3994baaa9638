"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "sheet-row-to-slack",
        "New Google Sheets row to a Slack message",
        "notifications",
        "Post each new spreadsheet row to Slack.",
        ("google-sheet", "new_row", "poll"),
        [
            action_step(
                "notify", "slack", "send_message", {"channel": "#general", "text": "New row {{ trigger.rowNumber }}: {{ trigger['values'] | join(', ') }}"}
            )
        ],
    ),
]
