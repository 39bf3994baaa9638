"""Provider actions over HTTP (spec 4.7 and 4.18): the catalog, a provider's actions, execution,
``POST /api/execute``, ``GET /api/registry/actions`` and dynamic field options."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import select

from patchbay.core.actions.service import ActionFailed, action_json, catalog, field_options, run_action
from patchbay.core.appkeys import DB, REGISTRY
from patchbay.core.connections.models import Connection
from patchbay.core.http.bodies import read_object
from patchbay.core.http.errors import ApiError, bad_request
from patchbay.core.http.providers import get_provider
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


def _failed(error: ActionFailed) -> ApiError:
    return ApiError(error.status, error.message)


async def _run(request: web.Request, *, connection_id: Any, action: str, inputs: Any, provider: str | None) -> web.Response:
    if not isinstance(connection_id, str) or not connection_id:
        raise bad_request("connectionId is required")
    try:
        result = await run_action(request.app, workspace_id=principal_of(request).workspace_id, connection_id=connection_id,
                                  action_name=action, inputs=inputs, provider=provider)  # fmt: skip
    except ActionFailed as error:
        raise _failed(error) from None
    return web.json_response({"success": True, "data": result}, status=201)


@routes.get("/connect/v1/providers/actions/catalog")
@requires()
async def get_catalog(request: web.Request) -> web.Response:
    """Every provider with at least one action, with its metadata and action count."""
    return web.json_response(catalog(request.app[REGISTRY]))


@routes.get("/connect/v1/providers/{providerType}/actions")
@requires("actions.view")
async def list_provider_actions(request: web.Request) -> web.Response:
    """A provider's actions with their input schemas and scopes."""
    name = get_provider(request.app[REGISTRY], request.match_info["providerType"]).name
    actions = request.app[REGISTRY].get("actions", name) or {}
    return web.json_response([action_json(name, a) for a in sorted(actions.values(), key=lambda a: a.name)])


@routes.post("/connect/v1/providers/{providerType}/actions/{actionName}")
@requires("actions.execute")
async def execute_provider_action(request: web.Request) -> web.Response:
    """Run an action with the workspace's connection to the provider.

    Body: the inputs, or ``{connectionId, inputs}``. Without a connectionId (body or the
    ``x-connection-id`` header) the workspace's only live connection to the provider is used."""
    provider = get_provider(request.app[REGISTRY], request.match_info["providerType"]).name
    body = await read_object(request)
    if "inputs" in body and isinstance(body.get("inputs"), dict):
        inputs, connection_id = body["inputs"], body.get("connectionId")
    else:
        inputs = {k: v for k, v in body.items() if k != "connectionId"}
        connection_id = body.get("connectionId")
    connection_id = connection_id or request.headers.get("x-connection-id")
    if not connection_id:
        async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
            ids = (await session.scalars(select(Connection.id).where(Connection.provider == provider, Connection.status != "disconnected"))).all()
        if len(ids) != 1:
            raise bad_request(f"connectionId is required ({len(ids)} connections to {provider})")
        connection_id = ids[0]
    return await _run(request, connection_id=connection_id, action=request.match_info["actionName"], inputs=inputs, provider=provider)


@routes.post("/api/execute")
@requires("actions.execute")
async def api_execute(request: web.Request) -> web.Response:
    """Server-to-server: ``{connectionId, action, inputs}`` runs an action with stored credentials."""
    body = await read_object(request)
    action = body.get("action")
    if not isinstance(action, str) or not action:
        raise bad_request("action is required")
    return await _run(request, connection_id=body.get("connectionId"), action=action, inputs=body.get("inputs") or {}, provider=None)


@routes.get("/api/registry/actions")
@requires("actions.view")
async def registry_actions(request: web.Request) -> web.Response:
    """Actions available for an app (``?appId=<provider>``), or for every app."""
    registry = request.app[REGISTRY]
    app_id = request.query.get("appId")
    if app_id:
        get_provider(registry, app_id)
        providers = {app_id: registry.get("actions", app_id) or {}}
    else:
        providers = registry.objects("actions")
    data = [action_json(name, a) for name, actions in sorted(providers.items()) for a in sorted(actions.values(), key=lambda a: a.name)]
    return web.json_response({"data": data})


@routes.get("/api/registry/actions/{actionId}/options/{fieldKey}")
@requires("actions.view")
async def registry_field_options(request: web.Request) -> web.Response:
    """Dynamic choices of an action's input field, read with ``?connectionId=``."""
    connection_id = request.query.get("connectionId")
    if not connection_id:
        raise bad_request("Query parameter 'connectionId' is required")
    try:
        options = await field_options(request.app, workspace_id=principal_of(request).workspace_id, action_id=request.match_info["actionId"],
                                      field=request.match_info["fieldKey"], connection_id=connection_id)  # fmt: skip
    except ActionFailed as error:
        raise _failed(error) from None
    return web.json_response({"data": options})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
