"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "gmail-to-notion",
        "Starred Gmail message to a Notion page",
        "productivity",
        "Save matching Gmail messages as pages in a Notion database.",
        ("google-mail", "new_email", "poll"),
        [
            action_step(
                "page",
                "notion",
                "create_page",
                {
                    "databaseId": "",
                    "title": "{{ trigger.subject | default('(no subject)') }}",
                    "properties": {},
                    "content": "From {{ trigger['from'] }}: {{ trigger.snippet }}",
                },
            )
        ],
    ),
]
