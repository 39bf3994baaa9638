"""Integrations at run time, over HTTP: a provider's OAuth app, scopes, API base URL and webhook
secrets, for the deployment (the operator's admin API key) under ``/connect/v1/deployment/integrations``
and for a workspace (its key with ``workspace.admin``) under ``/connect/v1/integrations``
(``core.integrations.service``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.accounts.auth import is_operator
from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Forbidden, Unauthenticated
from patchbay.core.http.bodies import named_values, read_object, structure
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.integrations import service
from patchbay.core.integrations.api_models import IntegrationSettings, IntegrationSettingsDeleted, IntegrationSettingsList, SaveIntegrationDto
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()
WORKSPACE = "/connect/v1/integrations"
DEPLOYMENT = "/connect/v1/deployment/integrations"


def _operator_only(request: web.Request) -> None:
    if is_operator(request):
        return
    if request.headers.get("x-api-key") or request.headers.get("Authorization"):
        raise Forbidden("This route needs the operator's admin API key ([admin] api_key)")
    raise Unauthenticated("Unauthorized")


async def _changes(request: web.Request) -> dict:
    body = await read_object(request)
    service.check_fields(body)
    return named_values(structure(body, SaveIntegrationDto), body)


# -- the workspace's ------------------------------------------------------------------------------


@routes.get(WORKSPACE)
@returns(IntegrationSettingsList)
@requires("workspace.admin")
async def list_workspace_integrations(request: web.Request) -> web.Response:
    """The providers with settings stored for the workspace, each with what is in effect."""
    principal = principal_of(request)
    data = await service.stored_list(request.app[SERVICES], workspace_id=principal.workspace_id)
    return reply(request, {"data": data})


@routes.get(WORKSPACE + "/{providerType}")
@returns(IntegrationSettings)
@requires("workspace.admin")
async def get_workspace_integration(request: web.Request) -> web.Response:
    """The provider's settings stored for the workspace (never a secret), and what is in effect."""
    principal = principal_of(request)
    answer = await service.describe(request.app[SERVICES], workspace_id=principal.workspace_id, provider_name=request.match_info["providerType"])
    return reply(request, answer)


@routes.patch(WORKSPACE + "/{providerType}")
@accepts(SaveIntegrationDto)
@returns(IntegrationSettings)
@requires("workspace.admin")
async def save_workspace_integration(request: web.Request) -> web.Response:
    """Set the workspace's OAuth app, scopes or API base URL for the provider (``null`` removes a
    value); used by every process on its next call."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    service.provider_named(services, request.match_info["providerType"])
    changes = await _changes(request)
    answer = await service.save(services, workspace_id=principal.workspace_id, provider_name=request.match_info["providerType"], body=changes)
    return reply(request, answer)


@routes.delete(WORKSPACE + "/{providerType}")
@returns(IntegrationSettingsDeleted)
@requires("workspace.admin")
async def delete_workspace_integration(request: web.Request) -> web.Response:
    """Remove every value stored for the provider in the workspace (the deployment's apply)."""
    principal = principal_of(request)
    name = request.match_info["providerType"]
    await service.delete(request.app[SERVICES], workspace_id=principal.workspace_id, provider_name=name)
    return reply(request, {"provider": name, "deleted": True})


# -- the deployment's -----------------------------------------------------------------------------


@routes.get(DEPLOYMENT)
@returns(IntegrationSettingsList)
async def list_deployment_integrations(request: web.Request) -> web.Response:
    """The providers with settings stored for the deployment. Operator only (the admin API key)."""
    _operator_only(request)
    data = await service.stored_list(request.app[SERVICES], workspace_id=None)
    return reply(request, {"data": data})


@routes.get(DEPLOYMENT + "/{providerType}")
@returns(IntegrationSettings)
async def get_deployment_integration(request: web.Request) -> web.Response:
    """The provider's settings stored for the deployment (never a secret), and what is in effect.
    Operator only."""
    _operator_only(request)
    answer = await service.describe(request.app[SERVICES], workspace_id=None, provider_name=request.match_info["providerType"])
    return reply(request, answer)


@routes.patch(DEPLOYMENT + "/{providerType}")
@accepts(SaveIntegrationDto)
@returns(IntegrationSettings)
async def save_deployment_integration(request: web.Request) -> web.Response:
    """Set the deployment's OAuth app, scopes, API base URL or webhook secrets for the provider
    (``null`` removes a value: the settings file's applies); used by every process on its next
    call. Operator only (the body is checked first: a malformed one is a 400 for anyone)."""
    services = request.app[SERVICES]
    changes = await _changes(request)
    _operator_only(request)
    service.provider_named(services, request.match_info["providerType"])
    answer = await service.save(services, workspace_id=None, provider_name=request.match_info["providerType"], body=changes)
    return reply(request, answer)


@routes.delete(DEPLOYMENT + "/{providerType}")
@returns(IntegrationSettingsDeleted)
async def delete_deployment_integration(request: web.Request) -> web.Response:
    """Remove every value stored for the provider for the deployment (the settings file's apply).
    Operator only."""
    _operator_only(request)
    name = request.match_info["providerType"]
    await service.delete(request.app[SERVICES], workspace_id=None, provider_name=name)
    return reply(request, {"provider": name, "deleted": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
