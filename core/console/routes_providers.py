"""A provider's page in the console, for every member: what connecting it takes, and its actions
and triggers with their input, output and configuration schemas and documentation links (what the
flows editor, the API's ``/connect/v1/providers/{type}`` and an agent's tools are made from)."""

from __future__ import annotations

import json

from aiohttp import web

from patchbay.core.actions.service import provider_actions, provider_triggers
from patchbay.core.console.pages import View, page, render
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import NotFound

routes = web.RouteTableDef()


@routes.get(PREFIX + "/w/{workspace_id}/providers/{provider}")
@page(description="A provider's actions and triggers with their schemas")
async def provider_page(request: web.Request, view: View) -> web.Response:
    """A provider's actions and triggers, each with its schemas and documentation link; 404 for a
    provider that is not installed."""
    registry = view.services.registry
    provider = registry.provider(request.match_info["provider"])
    if provider is None:
        raise NotFound("No such provider is installed.")
    context = {
        "provider": provider,
        "actions": provider_actions(registry, provider.name),
        "triggers": provider_triggers(registry, provider.name),
        "pretty": lambda value: json.dumps(value, indent=2, sort_keys=True),
    }
    return render(request, "console/provider.html", context, view=view, current="connections")
