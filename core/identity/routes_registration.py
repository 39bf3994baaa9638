"""``POST /api/v1/oidc/register``: dynamic client registration (``core.identity.registration``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.api_models import ClientRegistrationRequest
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.http import NO_STORE, PREFIX, add_route, client_ip, oauth_error, rate_limit, refusal
from patchbay.core.identity.protocol_models import ClientRegistration, oauth_errors
from patchbay.core.identity.registration import register_client

routes = web.RouteTableDef()


@accepts(ClientRegistrationRequest)
@returns(ClientRegistration, status=201, description="Registered (RFC 7591 3.2.1)")
@oauth_errors
async def register(request: web.Request) -> web.Response:
    """Register a client; its secret is in this answer and never again."""
    headers = await rate_limit(request, "oidc_register", f"ip:{client_ip(request)}")
    try:
        body = await read_object(request)
        structure(body, ClientRegistrationRequest)  # the published model first: authlib's checks assume its types
    except ApiError as error:
        problem = error.message.removeprefix("Validation failed: ")
        return oauth_error(400, "invalid_redirect_uri" if problem.startswith("redirect_uris") else "invalid_client_metadata", problem, headers)
    try:
        issued = await register_client(request.app[SERVICES], body, str(request.url), dict(request.headers))
    except OAuthRefusal as error:
        return refusal(error, headers)
    return reply(request, issued.registration_response(), status=201, headers={**NO_STORE, **headers})


add_route(routes, ("POST",), f"{PREFIX}/register", register)
