"""The system flow templates this pack offers (``register_flow_templates``), started by its triggers."""

from __future__ import annotations

from patchbay import action_step, flow_template

TEMPLATES = [
    flow_template(
        "stripe-charge-to-slack",
        "Stripe payment to a Slack message",
        "payments",
        "Announce every successful Stripe charge in Slack.",
        ("stripe", "new_charge", "poll"),
        [
            {"id": "paid", "type": "filter", "condition": "trigger.status == 'succeeded'"},
            {"id": "amount", "type": "transform", "output": {"display": "{{ '%.2f' | format(trigger.amount / 100) }} {{ trigger.currency | upper }}"}},
            action_step(
                "notify",
                "slack",
                "send_message",
                {"channel": "#sales", "text": ":moneybag: {{ steps.amount.output.display }} from {{ trigger.billing_details.email | default('a customer') }}"},
            ),
        ],
    ),
    flow_template(
        "stripe-customer-to-hubspot",
        "Stripe customer to HubSpot contact",
        "crm-sync",
        "Create a HubSpot contact for each new Stripe customer.",
        ("stripe", "new_customer", "poll"),
        [
            {"id": "has_email", "type": "filter", "condition": "trigger.email"},
            action_step("contact", "hubspot", "create_contact", {"email": "{{ trigger.email }}", "firstname": "{{ trigger.name | default('') }}"}),
        ],
    ),
]
