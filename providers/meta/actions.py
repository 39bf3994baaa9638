"""Meta (Facebook) lead ads: the ``leadgen`` webhook trigger (reading a lead, get_lead, is declared in
actions.toml)."""

from __future__ import annotations

from patchbay import Action, Trigger


def actions() -> list[Action]:
    """None in code: get_lead is declared in actions.toml."""
    return []


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="leadgen",
            display_name="New lead (lead ads)",
            kind="webhook",
            docs_url="https://developers.facebook.com/docs/graph-api/webhooks/getting-started/webhooks-for-leadgen",
            event_types=("leadgen",),
            description="A lead ad form was submitted.",
            sample={"leadgen_id": "123", "page_id": "456", "form_id": "789"},
        )
    ]
