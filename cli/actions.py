"""``patchbay actions``: the providers' actions, listed, and one run against a stored connection
through the service ``POST /api/execute`` uses (the same input checks, monthly cap and errors)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from patchbay.cli.runtime import _refuse_a_stray_data_folder, emit, json_option, plugin_failure, registry_from, settings_from
from patchbay.core.actions.service import all_actions, connection_workspace, provider_actions, run_action
from patchbay.core.errors import DomainError
from patchbay.core.plugins.registry import PluginError
from patchbay.core.services import build_services


@click.group("actions")
def actions() -> None:
    """Provider actions: list them, run one with a stored connection."""


@actions.command("list")
@click.argument("provider", required=False)
@json_option
def actions_list(provider: str | None, as_json: bool) -> None:
    """List the actions of PROVIDER (of every provider without it), with their titles and docs URLs."""
    _, registry = registry_from(settings_from())
    if provider is not None and registry.provider(provider) is None:
        raise click.ClickException(f"Provider not found: {provider}")
    data = provider_actions(registry, provider) if provider else all_actions(registry)
    emit(data, as_json, "\n".join(f"{a['id']:<48} {a['displayName']:<36} {a['docsUrl'] or ''}".rstrip() for a in data) or "no actions")


def _inputs(raw: str) -> dict[str, Any]:
    try:
        inputs = json.loads(raw)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--input") from None
    if not isinstance(inputs, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--input")
    return inputs


@actions.command("run")
@click.argument("provider")
@click.argument("action")
@click.option("--connection", "connection_id", required=True, help="Id of the stored connection to PROVIDER.")
@click.option("--input", "raw_inputs", default="{}", show_default=True, help="The action's inputs, a JSON object.")
@click.option("--workspace", "workspace_id", help="Workspace holding the connection [the connection's own].")
@json_option
def actions_run(provider: str, action: str, connection_id: str, raw_inputs: str, workspace_id: str | None, as_json: bool) -> None:
    """Run ACTION of PROVIDER with a stored connection and print its result as JSON (with --json,
    the body ``POST /api/execute`` answers: ``{"success": true, "data": ...}``). A refused input or
    a failing provider prints the reason and exits with status 1."""
    inputs = _inputs(raw_inputs)
    settings = settings_from()
    _refuse_a_stray_data_folder(settings)
    try:
        services = build_services(settings)
    except PluginError as error:
        raise plugin_failure(error) from None

    async def run() -> Any:
        async with services.running():
            workspace = workspace_id or await connection_workspace(services, connection_id)
            return await run_action(services, workspace_id=workspace, connection_id=connection_id, action_name=action, inputs=inputs, provider=provider)

    try:
        result = asyncio.run(run())
    except DomainError as error:
        raise click.ClickException(error.message) from None
    click.echo(json.dumps({"success": True, "data": result} if as_json else result, indent=2, default=str))
