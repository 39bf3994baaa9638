"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "mailchimp-subscriber-to-sheet",
        "New Mailchimp subscriber to a Google Sheets row",
        "marketing",
        "Log every new Mailchimp subscriber in a spreadsheet.",
        ("mailchimp", "new_subscriber", "poll"),
        [
            action_step(
                "row",
                "google-sheet",
                "append_row",
                {
                    "spreadsheetId": "",
                    "range": "Subscribers!A:C",
                    "values": ["{{ trigger.email_address }}", "{{ trigger.status }}", "{{ trigger.timestamp_opt | default('') }}"],
                },
            )
        ],
    ),
]
