"""Permission keys (spec Part 5) and the roles of contract section 4."""

from __future__ import annotations

PERMISSIONS: tuple[str, ...] = (
    "templates.view",
    "templates.write",
    "templates.publish",
    "actions.view",
    "actions.execute",
    "triggers.view",
    "triggers.write",
    "flows.view",
    "flows.write",
    "task_history.view",
    "records.view",
    "records.write",
    "tables.view",
    "tables.write",
    "alerts.view",
    "alerts.write",
    "connections.view",
    "connections.write",
    "webhooks.view",
    "webhooks.write",
    "leads.view",
    "leads.write",
    "billing.view",
    "billing.write",
    "workspace.admin",
    "approvals.view",
    "approvals.write",
)

_MANAGER_EXCLUDED = {"billing.view", "billing.write", "workspace.admin"}

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    "admin": frozenset(PERMISSIONS),
    "manager": frozenset(p for p in PERMISSIONS if p not in _MANAGER_EXCLUDED),
    "viewer": frozenset(p for p in PERMISSIONS if p.endswith(".view")),
}


def permissions_for_roles(roles: list[str]) -> frozenset[str]:
    granted: set[str] = set()
    for role in roles:
        granted |= ROLE_PERMISSIONS.get(role, frozenset())
    return frozenset(granted)
