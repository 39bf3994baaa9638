"""The federated login of the ``idp`` hint (4.23): the upstream round trip with its own state, nonce
and PKCE, the callback, linking or creating the user, and resuming the original authorization.

The protocol (how to talk to the upstream provider) is a plugin object registered through
``register_federated_login``; the built-in generic OpenID Connect one lives in
``patchbay.plugins.federation``. Providers are configured in ``[federation.<name>]`` tables."""

from __future__ import annotations

import base64
import hashlib

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Invalid
from patchbay.core.http.openapi import query
from patchbay.core.identity.http import PREFIX, add_route
from patchbay.core.identity.protocol_models import oauth_errors
from patchbay.core.identity.routes_authorize import continue_signed_in, error_to_client, goes_on_after_get
from patchbay.core.identity.service import link_federated_user, load_client
from patchbay.core.identity.session import seal, unseal
from patchbay.core.security.secrets import random_token

routes = web.RouteTableDef()
FEDERATION_COOKIE = "pb_idp_federation"
CALLBACK = f"{PREFIX}/federation/callback"


def _protocol(request: web.Request, idp: str):
    services = request.app[SERVICES]
    table = services.settings.federation[idp]
    return table, services.registry.get("federated_login", table.get("protocol", "oidc"))


def callback_url(request: web.Request) -> str:
    return request.app[SERVICES].settings.resolved_issuer + CALLBACK


async def start_federation(request: web.Request, params: dict, idp: str) -> web.Response:
    """Send the browser to the upstream provider's authorization endpoint."""
    table, protocol = _protocol(request, idp)
    state, nonce, verifier = random_token(16), random_token(16), random_token(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    try:
        url = await protocol.authorization_url(
            config=table, http=request.app[SERVICES].outbound.session, redirect_uri=callback_url(request), state=state, nonce=nonce, code_challenge=challenge
        )
    except Exception as error:  # an unreachable upstream must not become a 500 for the user
        return error_to_client(request, params, "temporarily_unavailable", f"the identity provider {idp} is unavailable ({type(error).__name__})")
    response = web.Response(status=302, headers={"Location": url, "Cache-Control": "no-store"})
    cookie = seal(request.app[SERVICES], "federation", {"s": state, "n": nonce, "v": verifier, "i": idp, "p": params}, 600)
    response.set_cookie(
        FEDERATION_COOKIE, cookie, httponly=True, samesite="Lax", path=CALLBACK, secure=request.app[SERVICES].settings.resolved_issuer.startswith("https://")
    )
    return response


@goes_on_after_get
@oauth_errors
@query(state={"type": "string"}, code={"type": "string"}, error={"type": "string"})
async def federation_callback(request: web.Request) -> web.Response:
    """Where the upstream provider returns: verify, link the user, resume the authorization."""
    services = request.app[SERVICES]
    data = unseal(services, "federation", request.cookies.get(FEDERATION_COOKIE))
    if data is None or request.query.get("state") != data["s"]:
        raise Invalid("federated login state is missing or does not match")
    params = data["p"]
    client = await load_client(services, params.get("client_id"))
    if client is None:
        raise Invalid("the client of this login no longer exists")
    if request.query.get("error") or not request.query.get("code"):
        return error_to_client(request, params, "access_denied", f"the identity provider answered {request.query.get('error', 'no code')}")
    table, protocol = _protocol(request, data["i"])
    try:
        claims = await protocol.complete(
            config=table,
            http=services.outbound.session,
            redirect_uri=callback_url(request),
            code=request.query["code"],
            code_verifier=data["v"],
            nonce=data["n"],
        )
    except Exception as error:  # the upstream answer did not verify
        return error_to_client(request, params, "access_denied", f"the federated login failed ({error})")
    user_id = await link_federated_user(services, data["i"], claims)
    response = await continue_signed_in(request, params, client, user_id)
    response.del_cookie(FEDERATION_COOKIE, path=CALLBACK)
    return response


add_route(routes, ("GET",), CALLBACK, federation_callback)
