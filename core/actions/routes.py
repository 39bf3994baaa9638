"""Provider actions over HTTP (spec 4.7 and 4.18): the catalog, a provider's actions, execution,
``POST /api/execute``, ``GET /api/registry/actions`` and dynamic field options. The bodies read and
answered are the models of ``core.actions.api_models``.

Listings that can hold hundreds page when asked with ``?page=``/``?limit=``: ``/api/registry/actions``
then answers the page envelope (``{data, page, limit, total}``), the catalog and a provider's actions
keep their documented array with ``X-Total-Count`` telling how many there are."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.actions.api_models import ActionList, ActionOption, ActionResult, CatalogEntry, ExecuteDto, FieldOptions, ProviderActionDto
from patchbay.core.actions.service import all_actions, catalog, field_options, only_connection, provider_actions, run_action
from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_envelope, read_body, read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.providers import array_page, get_provider, requested_page
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
@query(**PAGE_QUERY)
@returns(list[CatalogEntry])
@requires()
async def get_catalog(request: web.Request) -> web.Response:
    """Every provider with at least one action, with its metadata and action count; ``?page=``/``?limit=``
    page it (``X-Total-Count`` tells how many providers there are)."""
    entries, headers = array_page(request, catalog(request.app[SERVICES].registry))
    return reply(request, entries, headers=headers)


@routes.get("/connect/v1/providers/{providerType}/actions")
@query(**PAGE_QUERY)
@returns(list[ActionOption])
@requires("actions.view")
async def list_provider_actions(request: web.Request) -> web.Response:
    """A provider's actions with their input (and declared output) schemas, scopes and docs links;
    ``?page=``/``?limit=`` page them (``X-Total-Count`` tells how many there are)."""
    registry = request.app[SERVICES].registry
    actions, headers = array_page(request, provider_actions(registry, get_provider(registry, request.match_info["providerType"]).name))
    return reply(request, actions, headers=headers)


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
@query(**PAGE_QUERY, appId={"type": "string"})
@returns(ActionList)
@requires("actions.view")
async def registry_actions(request: web.Request) -> web.Response:
    """Actions available for an app (``?appId=<provider>``), or for every app, by provider then
    name: all of them, or a page at a time with ``?page=``/``?limit=`` (20 by default, at most 100)."""
    registry = request.app[SERVICES].registry
    app_id = request.query.get("appId")
    actions = provider_actions(registry, get_provider(registry, app_id).name) if app_id else all_actions(registry)
    page_of, asked = requested_page(request, actions)
    return reply(request, {"data": actions} if asked is None else page_envelope(page_of, *asked, len(actions)))


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
