"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "airtable-record-to-gmail",
        "New Airtable record to an email",
        "productivity",
        "Email a summary of each new Airtable record.",
        ("airtable", "new_record", "poll"),
        [action_step("email", "google-mail", "send_email", {"to": "", "subject": "New record {{ trigger.id }}", "body": "{{ trigger.fields | tojson }}"})],
    ),
]
