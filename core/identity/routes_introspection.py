"""``POST /api/v1/oidc/introspect`` (RFC 7662) and ``POST /api/v1/oidc/revoke`` (RFC 7009) through
authlib's endpoints. Only refresh tokens can be revoked; access tokens are JWTs that expire."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts
from patchbay.core.http.responses import EMPTY, reply, returns
from patchbay.core.identity.http import NO_STORE, PREFIX, add_route, limit_key, oauth_request, presented_credentials, rate_limit, to_response
from patchbay.core.identity.protocol_models import TokenIntrospection, TokenOfClient, oauth_errors
from patchbay.core.identity.server import CURRENT, AccessView, apply_writes
from patchbay.core.identity.service import grant_revoked, load_client, load_refresh, new_context
from patchbay.core.security.service import verify_access_token
from patchbay.core.security.signing_keys import InvalidToken

routes = web.RouteTableDef()


async def _prepare(request: web.Request, limit: str):
    form = await read_form(request)
    client_id, secret = presented_credentials(request, form)
    services = request.app[SERVICES]
    client = await load_client(services, client_id)
    headers = await rate_limit(request, limit, limit_key(request, client, secret))
    ctx = new_context(services)
    if client is not None:
        ctx.clients[client.client_id] = client
    await load_refresh(services, ctx, form.get("token"))
    return form, headers, ctx


@returns(TokenIntrospection)
@oauth_errors
@accepts(TokenOfClient, media=FORM)
async def introspect(request: web.Request) -> web.Response:
    """Whether a token is active, and its facts (the caller's own tokens only)."""
    form, headers, ctx = await _prepare(request, "oidc_introspect")
    if ctx.refresh is None and form.get("token"):
        try:
            claims = await verify_access_token(request.app[SERVICES], form["token"])
            ctx.access = AccessView(claims, await grant_revoked(request.app[SERVICES], claims))
        except InvalidToken:
            pass
    CURRENT.set(ctx)
    result = request.app[SERVICES].identity.server.create_endpoint_response("introspection", oauth_request(request, form))
    if result.status != 200:
        return to_response(result, extra_headers=headers)
    body = {key: value for key, value in result.body.items() if value is not None}
    return reply(request, body, headers={**{name: value for name, value in result.headers if name.lower() != "content-type"}, **headers, **NO_STORE})


@returns(EMPTY, description="Revoked, or not a token of this client (RFC 7009 2.2): no body")
@oauth_errors
@accepts(TokenOfClient, media=FORM)
async def revoke(request: web.Request) -> web.Response:
    """Revoke a refresh token; always 200 with an empty body for a valid client."""
    form, headers, ctx = await _prepare(request, "oidc_revoke")
    CURRENT.set(ctx)
    services = request.app[SERVICES]
    result = services.identity.server.create_endpoint_response("revocation", oauth_request(request, form))
    await apply_writes(services.db, ctx)
    if result.status == 200:
        result.body = ""
    return to_response(result, extra_headers=headers)


add_route(routes, ("POST",), f"{PREFIX}/introspect", introspect)
add_route(routes, ("POST",), f"{PREFIX}/revoke", revoke)
