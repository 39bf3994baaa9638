"""``GET|POST /api/v1/oidc/userinfo``: the claims the access token's scopes grant (2.16)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.claims import scope_list, user_claims
from patchbay.core.identity.http import NO_STORE, PREFIX, add_route, rate_limit
from patchbay.core.identity.protocol_models import UserInfo, UserInfoRequest, oauth_errors
from patchbay.core.identity.resources import is_resource_token
from patchbay.core.identity.service import grant_revoked, user_facts
from patchbay.core.security.service import verify_access_token
from patchbay.core.security.signing_keys import InvalidToken

routes = web.RouteTableDef()


def invalid_token(description: str, headers: dict[str, str] | None = None) -> web.Response:
    challenge = f'Bearer error="invalid_token", error_description="{description}"'
    return web.json_response(
        {"error": "invalid_token", "error_description": description}, status=401, headers={**NO_STORE, **(headers or {}), "WWW-Authenticate": challenge}
    )


@returns(UserInfo)
@oauth_errors
@accepts(UserInfoRequest, required=False, media=FORM, method="POST")
async def userinfo(request: web.Request) -> web.Response:
    """The signed-in user's claims for the scopes of the Bearer access token."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if not request.headers.get("Authorization") and request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        scheme, token = "bearer", (await read_form(request)).get("access_token") or ""  # RFC 6750 2.2, form body
    if scheme.lower() != "bearer" or not token.strip():
        return web.json_response(
            {"error": "invalid_token", "error_description": "Bearer access token required"},
            status=401,
            headers={**NO_STORE, "WWW-Authenticate": 'Bearer realm="patchbay"'},
        )
    token = token.strip()
    services = request.app[SERVICES]
    headers = await rate_limit(request, "oidc_userinfo", "token:" + services.secrets.digest(token)[:32])
    try:
        claims = await verify_access_token(services, token)
    except InvalidToken as error:
        return invalid_token(f"the access token is invalid ({error})", headers)
    if is_resource_token(claims):
        return invalid_token("the access token is for another resource", headers)
    if claims.get("sub") == claims.get("client_id") or "openid" not in scope_list(claims.get("scope")):
        return invalid_token("the access token was not issued to a user with the openid scope", headers)
    if await grant_revoked(services, claims):
        return invalid_token("the grant of this token was revoked", headers)
    facts = await user_facts(services, claims["sub"])
    if facts is None:
        return invalid_token("the user no longer exists", headers)
    return reply(request, user_claims(facts, claims.get("scope")), headers={**NO_STORE, **headers})


add_route(routes, ("GET", "POST"), f"{PREFIX}/userinfo", userinfo)
