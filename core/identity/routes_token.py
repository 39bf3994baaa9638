"""``POST /api/v1/oidc/token``: authorization_code (+PKCE), refresh_token and client_credentials,
run by authlib's grants in a worker thread against rows loaded beforehand."""

from __future__ import annotations

import asyncio

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts
from patchbay.core.http.responses import returns
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.http import PREFIX, add_route, limit_key, oauth_error, oauth_request, presented_credentials, rate_limit, refusal, to_response
from patchbay.core.identity.protocol_models import TokenRequest, TokenResponse, oauth_errors
from patchbay.core.identity.resources import check_token_resource
from patchbay.core.identity.server import CURRENT, UNSIGNED
from patchbay.core.identity.service import finish_token_request, load_client, load_code, load_refresh, new_context

routes = web.RouteTableDef()


@returns(TokenResponse, description="Issued (Cache-Control: no-store)")
@oauth_errors
@accepts(TokenRequest, media=FORM)
async def token(request: web.Request) -> web.Response:
    """Issue tokens for the authorization_code, refresh_token and client_credentials grants."""
    form = await read_form(request)
    if len(set(form.keys())) != len(form):  # a parameter sent more than once
        duplicated = sorted({key for key in form if len(form.getall(key)) > 1})
        return oauth_error(400, "invalid_request", f"parameter(s) sent more than once: {', '.join(duplicated)}")
    client_id, secret = presented_credentials(request, form)
    services = request.app[SERVICES]
    client = await load_client(services, client_id)  # a metadata document's client: as stored when it authorized
    limit_headers = await rate_limit(request, "oidc_token", limit_key(request, client, secret))
    ctx = new_context(services)
    if client is not None:
        ctx.clients[client.client_id] = client
        ctx.clients[client.public_id] = client  # a metadata document's URL, as the request names it
    grant_type = form.get("grant_type")
    if grant_type == "authorization_code":
        await load_code(services, ctx, form.get("code"))
    elif grant_type == "refresh_token":
        await load_refresh(services, ctx, form.get("refresh_token"))
    try:
        check_token_resource(services, ctx, grant_type, form.get("resource"))
    except OAuthRefusal as error:
        return refusal(error, limit_headers)
    await services.signing_keys.refresh()
    CURRENT.set(ctx)
    if grant_type == "client_credentials":
        # no ID token hashes this access token: authlib's checks run here, and only the RSA
        # signature goes to a signing thread (a thread hop for all of authlib's Python would make
        # the event loop wait for the GIL)
        ctx.defer_signing = True
        result = services.identity.server.create_token_response(oauth_request(request, form))
        if ctx.unsigned is not None and result.body.get("access_token") == UNSIGNED:
            result.body["access_token"] = await services.signing_keys.finish(ctx.unsigned)
    else:
        result = await asyncio.to_thread(services.identity.server.create_token_response, oauth_request(request, form))
    try:
        await finish_token_request(services, ctx)
    except OAuthRefusal as error:
        return refusal(error, limit_headers)
    return to_response(result, extra_headers=limit_headers)


add_route(routes, ("POST",), f"{PREFIX}/token", token)
