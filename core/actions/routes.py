"""Provider actions over HTTP (spec 4.7 and 4.18): the catalog, a provider's actions, execution,
``POST /api/execute``, ``GET /api/registry/actions`` and dynamic field options. The bodies read and
answered are the models of ``core.actions.api_models``."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.actions.api_models import ActionList, ActionOption, ActionResult, CatalogEntry, ExecuteDto, FieldOptions, ProviderActionDto
from patchbay.core.actions.service import action_json, catalog, field_options, only_connection, run_action
from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_body, read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.providers import get_provider
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


async def _run(request: web.Request, *, connection_id: str | None, action: str, inputs: Any, provider: str | None) -> web.Response:
    if not connection_id:
        raise bad_request("connectionId is required")
    result = await run_action(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        connection_id=connection_id,
        action_name=action,
        inputs=inputs,
        provider=provider,
    )
    return reply(request, {"success": True, "data": result}, status=201)


@routes.get("/connect/v1/providers/actions/catalog")
@returns(list[CatalogEntry])
@requires()
async def get_catalog(request: web.Request) -> web.Response:
    """Every provider with at least one action, with its metadata and action count."""
    return reply(request, catalog(request.app[SERVICES].registry))


@routes.get("/connect/v1/providers/{providerType}/actions")
@returns(list[ActionOption])
@requires("actions.view")
async def list_provider_actions(request: web.Request) -> web.Response:
    """A provider's actions with their input schemas and scopes."""
    name = get_provider(request.app[SERVICES].registry, request.match_info["providerType"]).name
    actions = request.app[SERVICES].registry.get("actions", name) or {}
    return reply(request, [action_json(name, a) for a in sorted(actions.values(), key=lambda a: a.name)])


@routes.post("/connect/v1/providers/{providerType}/actions/{actionName}")
@accepts(ProviderActionDto)
@returns(ActionResult, status=201, description="Executed")
@requires("actions.execute")
async def execute_provider_action(request: web.Request) -> web.Response:
    """Run an action with the workspace's connection to the provider.

    Body: the inputs, or ``{connectionId, inputs}``. Without a connectionId (body or the
    ``x-connection-id`` header) the workspace's only live connection to the provider is used."""
    provider = get_provider(request.app[SERVICES].registry, request.match_info["providerType"]).name
    body = await read_object(request)
    dto = structure(body, ProviderActionDto)
    inputs = dto.inputs if dto.inputs is not None else {k: v for k, v in body.items() if k != "connectionId"}
    connection_id = dto.connectionId or request.headers.get("x-connection-id")
    if not connection_id:
        connection_id = await only_connection(request.app[SERVICES], principal_of(request).workspace_id, provider)
    return await _run(request, connection_id=connection_id, action=request.match_info["actionName"], inputs=inputs, provider=provider)


@routes.post("/api/execute")
@accepts(ExecuteDto)
@returns(ActionResult, status=201, description="Executed")
@requires("actions.execute")
async def api_execute(request: web.Request) -> web.Response:
    """Server-to-server: ``{connectionId, action, inputs}`` runs an action with stored credentials."""
    dto = await read_body(request, ExecuteDto)
    if not dto.action:
        raise bad_request("Validation failed: action is required")
    return await _run(request, connection_id=dto.connectionId, action=dto.action, inputs=dto.inputs or {}, provider=None)


@routes.get("/api/registry/actions")
@query(appId={"type": "string"})
@returns(ActionList)
@requires("actions.view")
async def registry_actions(request: web.Request) -> web.Response:
    """Actions available for an app (``?appId=<provider>``), or for every app."""
    registry = request.app[SERVICES].registry
    app_id = request.query.get("appId")
    if app_id:
        get_provider(registry, app_id)
        providers = {app_id: registry.get("actions", app_id) or {}}
    else:
        providers = registry.objects("actions")
    data = [action_json(name, a) for name, actions in sorted(providers.items()) for a in sorted(actions.values(), key=lambda a: a.name)]
    return reply(request, {"data": data})


@routes.get("/api/registry/actions/{actionId}/options/{fieldKey}")
@query(connectionId={"type": "string", "minLength": 1})
@returns(FieldOptions)
@requires("actions.view")
async def registry_field_options(request: web.Request) -> web.Response:
    """Dynamic choices of an action's input field, read with ``?connectionId=``."""
    connection_id = request.query.get("connectionId")
    if not connection_id:
        raise bad_request("Query parameter 'connectionId' is required")
    options = await field_options(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        action_id=request.match_info["actionId"],
        field=request.match_info["fieldKey"],
        connection_id=connection_id,
    )
    return reply(request, {"data": options})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
