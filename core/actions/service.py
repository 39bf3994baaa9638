"""Provider actions (spec 4.7, 4.18): the catalog, input checks, and execution through the
provider's registered action with the stored connection, counted against the monthly cap.

Flows' ``action`` steps, ``POST /connect/v1/providers/{type}/actions/{name}`` and ``/api/execute`` all
go through :func:`run_action`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from patchbay.core.actions.inputs import check_inputs
from patchbay.core.billing.limits import consume
from patchbay.core.connections.models import Connection
from patchbay.core.errors import Conflict, Invalid, NotFound, RateLimited, UpstreamFailed

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: the domain errors an action's ``run`` raises that reach the caller as they are (``RateLimited``
#: keeps its ``Retry-After``); other kinds (an ``Unauthenticated`` would blame the caller) are wrapped
PASSED_THROUGH = (Invalid, NotFound, Conflict, RateLimited, UpstreamFailed)


def action_json(provider: str, action: Any) -> dict[str, Any]:
    """An action as listed: ``inputs`` is its JSON Schema, ``output`` the result's when declared."""
    return {
        "id": f"{provider}.{action.name}",
        "name": action.name,
        "provider": provider,
        "displayName": action.display_name,
        "description": action.description,
        "docsUrl": action.docs_url,
        "inputs": dict(action.inputs),
        "output": dict(action.output) if action.output is not None else None,
        "scopes": list(action.scopes),
        "dynamicFields": sorted(action.options),
    }


def trigger_json(trigger: Any) -> dict[str, Any]:
    """A trigger as listed: ``config`` is the JSON Schema of a subscription's configuration."""
    return {
        "name": trigger.name,
        "displayName": trigger.display_name,
        "kind": trigger.kind,
        "description": trigger.description,
        "docsUrl": trigger.docs_url,
        "eventTypes": list(trigger.event_types),
        "config": dict(trigger.config),
        "sample": dict(trigger.sample),
    }


def provider_actions(registry: Any, provider: str) -> list[dict[str, Any]]:
    """The provider's actions by name (none for an unknown provider)."""
    return [action_json(provider, a) for a in sorted((registry.get("actions", provider) or {}).values(), key=lambda a: a.name)]


def provider_triggers(registry: Any, provider: str) -> list[dict[str, Any]]:
    """The provider's triggers by name (none for an unknown provider)."""
    return [trigger_json(t) for t in sorted((registry.get("triggers", provider) or {}).values(), key=lambda t: t.name)]


def all_actions(registry: Any) -> list[dict[str, Any]]:
    """Every provider's actions, by provider then name."""
    return [action for name in sorted(registry.objects("actions")) for action in provider_actions(registry, name)]


def catalog(registry: Any) -> list[dict[str, Any]]:
    """Every provider with at least one action, with its metadata and action count."""
    entries = []
    for name, actions in sorted(registry.objects("actions").items()):
        provider = registry.provider(name)
        if provider is None or not actions:
            continue
        entries.append(
            {
                "providerType": name,
                "name": name,
                "displayName": provider.display_name,
                "category": provider.category,
                "authMode": provider.auth_mode,
                "actionCount": len(actions),
                "actions": sorted(actions),
            }
        )
    return entries


def find_action(registry: Any, provider: str, action_name: str) -> Any:
    action = (registry.get("actions", provider) or {}).get(action_name)
    if action is None:
        raise NotFound(f"Action not found: {provider}.{action_name}")
    return action


async def _connection(services: Services, workspace_id: str, connection_id: str) -> Connection:
    async with services.db.session(tenant=workspace_id) as session:
        connection = await session.scalar(select(Connection).where(Connection.id == connection_id))
    if connection is None or connection.status == "disconnected":
        raise NotFound("Connection not found")
    return connection


async def connection_workspace(services: Services, connection_id: str) -> str:
    """The workspace holding the connection (for the CLI, which acts for no one workspace);
    ``NotFound`` when there is no such connection or it is disconnected."""
    async with services.db.session() as session:
        row = (await session.execute(select(Connection.workspace_id, Connection.status).where(Connection.id == connection_id))).first()
    if row is None or row.status == "disconnected":
        raise NotFound("Connection not found")
    return row.workspace_id


async def only_connection(services: Services, workspace_id: str, provider: str) -> str:
    """The id of the workspace's one connection to ``provider`` that is not disconnected;
    ``Invalid`` when there is none or more than one (the caller must name it)."""
    async with services.db.session(tenant=workspace_id) as session:
        ids = (await session.scalars(select(Connection.id).where(Connection.provider == provider, Connection.status != "disconnected"))).all()
    if len(ids) != 1:
        raise Invalid(f"connectionId is required ({len(ids)} connections to {provider})")
    return ids[0]


async def run_action(services: Services, *, workspace_id: str, connection_id: str, action_name: str, inputs: Any, provider: str | None = None) -> Any:
    """Run ``action_name`` of the connection's provider with ``inputs``; answers its result.

    ``action_name`` may be qualified (``acme.create_contact``). Raises ``NotFound`` (unknown action
    or connection), ``Invalid`` (inputs that fail the action's schema), ``PlanLimitExceeded`` (the
    monthly cap), or what the action itself raised of :data:`PASSED_THROUGH` (a declared action's
    provider answering 404, 409 or 429, a pack refusing an input); any other failure of the action
    is ``UpstreamFailed``."""
    from patchbay.core.connections.client import open_client

    if "." in action_name and action_name.rsplit(".", 1)[0]:
        qualified_provider, action_name = action_name.rsplit(".", 1)
        provider = provider or qualified_provider
    connection = await _connection(services, workspace_id, connection_id)
    if provider and provider != connection.provider:
        raise Invalid(f"connectionId: the connection is to {connection.provider}, not {provider}")
    action = find_action(services.registry, connection.provider, action_name)
    inputs = check_inputs(dict(action.inputs), inputs)
    async with services.db.transaction() as session:
        await consume(session, workspace_id, "action_executions")
    client = await open_client(services, workspace_id=workspace_id, connection_id=connection_id)
    try:
        result = await action.run(client, inputs)
    except PASSED_THROUGH:
        raise
    except Exception as error:  # the provider refused or the pack failed: a bad gateway
        raise UpstreamFailed(f"{connection.provider}.{action_name} failed: {error}") from None
    return result


async def field_options(services: Services, *, workspace_id: str, action_id: str, field: str, connection_id: str) -> list[Any]:
    """Dynamic choices of one input field of an action, read through the connection."""
    from patchbay.core.connections.client import open_client

    provider, _, name = action_id.rpartition(".")
    if not provider:
        raise NotFound(f"Action not found: {action_id}")
    action = find_action(services.registry, provider, name)
    loader = action.options.get(field)
    if loader is None:
        raise NotFound(f"Action {action_id} has no dynamic options for {field!r}")
    connection = await _connection(services, workspace_id, connection_id)
    if connection.provider != provider:
        raise Invalid(f"connectionId: the connection is to {connection.provider}, not {provider}")
    client = await open_client(services, workspace_id=workspace_id, connection_id=connection_id)
    try:
        options = loader(client)
        return list(await options if inspect.isawaitable(options) else options)
    except Exception as error:
        raise UpstreamFailed(f"loading options of {action_id}.{field} failed: {error}") from None
