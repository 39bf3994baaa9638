"""Builders of system flow templates (spec 2.6), which provider packs register with
``register_flow_templates``; exported from ``patchbay`` as ``flow_template`` and ``action_step``.

An action step's ``connectionId`` of ``$connection:<provider>`` is bound, when the template is
cloned, to the workspace's connection to that provider (the trigger's provider takes the clone's
``triggerConnectionId``).
"""

from __future__ import annotations

from typing import Any


def flow_template(slug: str, name: str, category: str, description: str, trigger: tuple[str, str, str], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A template row: ``trigger`` is ``(provider, trigger name, kind)``; ``providers`` lists the
    providers its action steps connect to."""
    providers = sorted({s["connectionId"].split(":", 1)[1] for s in steps if str(s.get("connectionId", "")).startswith("$connection:")})
    return {
        "slug": slug,
        "name": name,
        "category": category,
        "description": description,
        "trigger": {"providerType": trigger[0], "triggerName": trigger[1], "kind": trigger[2]},
        "steps": steps,
        "providers": providers,
    }


def action_step(step_id: str, provider: str, action: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An ``action`` step bound, at clone time, to the workspace's connection to ``provider``."""
    return {"id": step_id, "type": "action", "provider": provider, "action": action, "connectionId": f"$connection:{provider}", "inputs": inputs}


def providers_of_template(template: dict[str, Any]) -> set[str]:
    """Every provider a template uses: its trigger's and its action steps'."""
    return {template["trigger"]["providerType"], *template["providers"]}
