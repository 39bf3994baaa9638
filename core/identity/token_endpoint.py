"""``POST /api/v1/oidc/token``: authorization_code (+PKCE), refresh_token and client_credentials,
run by authlib's grants in a worker thread against rows loaded beforehand."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from urllib.parse import unquote

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import DB, SECRETS, SIGNING_KEYS
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts
from patchbay.core.http.responses import returns
from patchbay.core.identity.claims import load_user_facts
from patchbay.core.identity.clients import Client
from patchbay.core.identity.http import OAUTH_SERVER, PREFIX, add_route, client_ip, load_client, new_context, oauth_error, oauth_request, rate_limit, to_response
from patchbay.core.identity.models import AuthorizationCode, Grant, RefreshToken
from patchbay.core.identity.protocol_models import TokenRequest, TokenResponse, oauth_errors
from patchbay.core.identity.server import CURRENT, UNSIGNED, CodeView, Context, RefreshView, WriteConflict, apply_writes, revoke_grant

routes = web.RouteTableDef()


def presented_credentials(request: web.Request, form) -> tuple[str | None, str | None]:
    """``(client_id, client_secret)`` of client_secret_basic, else of the form."""
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "basic ":
        try:
            decoded = base64.b64decode(header[6:].strip()).decode()
        except (binascii.Error, UnicodeDecodeError):
            return form.get("client_id"), form.get("client_secret")
        client_id, _, secret = decoded.partition(":")
        return unquote(client_id) or None, unquote(secret) or None
    return form.get("client_id"), form.get("client_secret")


def limit_key(request: web.Request, client: Client | None, secret: str | None) -> Callable[[], str]:
    """What a token, introspection or revocation request counts against: the client once its secret
    checks out, else the caller's address (a made-up client id must not open a fresh limit).
    Asked only when the limit is on (``rate_limit``), since it checks the secret."""

    def key() -> str:
        if client is not None and secret and client.check_client_secret(secret):
            return f"client:{client.client_id}"
        return f"ip:{client_ip(request)}"

    return key


async def load_refresh(request: web.Request, ctx: Context, token: str | None) -> None:
    if not token:
        return
    async with request.app[DB].session() as session:
        found = (await session.execute(
            select(RefreshToken, Grant).join(Grant, Grant.id == RefreshToken.grant_id)
            .where(RefreshToken.token_digest.in_(request.app[SECRETS].digests(token)))
        )).first()  # fmt: skip
        if found is None:
            return
        row, grant = found
        ctx.refresh = RefreshView(row.id, row.grant_id, row.client_id, row.user_id, row.scope, row.expires_at.timestamp(),
                                  row.revoked_at is not None, row.rotated_at is not None, grant.revoked_at is not None, grant.auth_time, token,
                                  int(row.created_at.timestamp()))  # fmt: skip
        facts = await load_user_facts(session, row.user_id)
    if facts is not None:
        ctx.users[facts.id] = facts


async def _load_code(request: web.Request, ctx: Context, code: str | None) -> None:
    if not code:
        return
    async with request.app[DB].session() as session:
        row = await session.scalar(select(AuthorizationCode).where(AuthorizationCode.code_digest.in_(request.app[SECRETS].digests(code))))
        if row is None:
            return
        ctx.code = CodeView.from_row(row)
        facts = await load_user_facts(session, row.user_id)
    if facts is not None:
        ctx.users[facts.id] = facts


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
    client = await load_client(request, client_id)
    limit_headers = await rate_limit(request, "oidc_token", limit_key(request, client, secret))
    app = request.app
    ctx = new_context(app)
    if client is not None:
        ctx.clients[client.client_id] = client
    grant_type = form.get("grant_type")
    if grant_type == "authorization_code":
        await _load_code(request, ctx, form.get("code"))
    elif grant_type == "refresh_token":
        await load_refresh(request, ctx, form.get("refresh_token"))
    await app[SIGNING_KEYS].refresh()
    CURRENT.set(ctx)
    if grant_type == "client_credentials":
        # no ID token hashes this access token: authlib's checks run here, and only the RSA
        # signature goes to a signing thread (a thread hop for all of authlib's Python would make
        # the event loop wait for the GIL)
        ctx.defer_signing = True
        result = app[OAUTH_SERVER].create_token_response(oauth_request(request, form))
        if ctx.unsigned is not None and result.body.get("access_token") == UNSIGNED:
            result.body["access_token"] = await app[SIGNING_KEYS].finish(ctx.unsigned)
    else:
        result = await asyncio.to_thread(app[OAUTH_SERVER].create_token_response, oauth_request(request, form))
    try:
        if ctx.revoke_grant:
            async with app[DB].transaction() as session:
                await revoke_grant(session, ctx.revoke_grant)
        await apply_writes(app[DB], ctx)
    except WriteConflict:
        # the same code or rotated refresh token won a race elsewhere: treat as a reuse
        await _revoke_after_race(request, ctx)
        return oauth_error(400, "invalid_grant", "the grant was already used", limit_headers)
    return to_response(result, extra_headers=limit_headers)


async def _revoke_after_race(request: web.Request, ctx: Context) -> None:
    async with request.app[DB].transaction() as session:
        grant_id = ctx.refresh.grant_id if ctx.refresh is not None else None
        if ctx.code is not None:
            grant_id = await session.scalar(select(AuthorizationCode.grant_id).where(AuthorizationCode.id == ctx.code.id))
        if grant_id:
            await revoke_grant(session, grant_id)


add_route(routes, ("POST",), f"{PREFIX}/token", token)


