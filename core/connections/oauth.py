"""The OAuth connection of a provider, without HTTP: starting a login, the ``state`` that names it,
the binding of a login to the browser that started it, and completing it with the provider's code.

The ``state`` sent to the provider is the id of a stored login (``OAuthState``) plus an HMAC binding
it to the workspace, the provider, the return URL and the callback URL; completing deletes the row
before using it, so a state works once. PKCE (S256) is added for providers whose definition says
``pkce=True``.

Binding (issue 11, point 10): the callback completes a login only in a browser holding the login's
binding cookie (``pb_oauth_<state id>``, an HMAC of the state id). A login made with the caller's
credentials in a header and answered with a redirect sets it on that redirect; otherwise
(``response=json``, or a login authorized by ``token=`` in the URL, i.e. a link anyone could have
forwarded) the answer is our ``/auth/{provider}/begin`` URL, whose confirmation sets it. A forwarded
link therefore never connects silently, and the provider's authorization URL alone is useless
without the cookie.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import attrs
from sqlalchemy import delete, select

from patchbay.core.approvals import service as approvals
from patchbay.core.connections import service
from patchbay.core.connections.auth import ProviderAuthError, TemplateError, UnvouchedHost, auth_for, check_fillable, pkce_pair
from patchbay.core.connections.models import OAuthState
from patchbay.core.connections.store import auth_context, enforce_provider_limit, get_row, oauth_app_for, save_connection, token_credentials
from patchbay.core.errors import DomainError, Invalid, NotFound
from patchbay.core.integrations import service as integrations
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.auth import Principal
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

STATE_LIFETIME = timedelta(minutes=10)
COOKIE_PREFIX = "pb_oauth_"


class HeldForApproval(Exception):
    """The workspace's approval policy holds the login; each caller answers it its own way."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(approval_id)
        self.approval_id = approval_id


class NotBound(Exception):
    """The state is genuine but this browser did not start its login (it is left for the one that did)."""


@attrs.frozen
class StartedLogin:
    """A stored login: ``authorization_url`` is the provider's page, ``begin_url`` our confirmation
    page that binds the browser first; ``state_id`` names the binding cookie, valid until ``expires_at``."""

    state_id: str
    authorization_url: str
    begin_url: str
    expires_at: datetime


@attrs.frozen
class LoginOutcome:
    """A completed login: the connection made, or the OAuth ``error`` code and its description."""

    connection_id: str | None = None
    error: str | None = None
    description: str | None = None


def callback_url(services: Services, provider: str) -> str:
    return f"{services.settings.public_base_url}/auth/{provider}/callback"


def begin_url(services: Services, provider: str, state: str) -> str:
    return f"{services.settings.public_base_url}/auth/{provider}/begin?" + urlencode({"state": state})


def _state_message(row: OAuthState) -> bytes:
    return "|".join((row.id, row.workspace_id, row.provider, row.return_to or "", row.callback_uri)).encode()


def state_mac(services: Services, row: OAuthState) -> str:
    return services.secrets.sign(_state_message(row))


def state_is_authentic(services: Services, row: OAuthState, state: str) -> bool:
    """Whether ``state`` (``<id>.<mac>``) is the one issued for the login ``row``, under any
    configured secret key (a login started before a key rotation completes after it)."""
    state_id, _, mac = state.partition(".")
    return state_id == row.id and bool(mac) and services.secrets.verify_signature(_state_message(row), mac)


def binding_message(state_id: str) -> bytes:
    return f"oauth-binding|{state_id}".encode()


def binding_value(services: Services, state_id: str) -> str:
    """The value of the binding cookie of the login ``state_id``."""
    return services.secrets.sign(binding_message(state_id))


def is_bound(services: Services, state_id: str, presented: str) -> bool:
    """Whether ``presented`` is the binding cookie's value of the login ``state_id``."""
    return bool(presented) and services.secrets.verify_signature(binding_message(state_id), presented)


def _check_return_to(value: str | None) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid("Validation failed: redirect_uri must be an absolute http(s) URL")
    return value


def _metadata_query(value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    try:
        metadata = json.loads(value)
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        raise Invalid("Validation failed: metadata must be a JSON object")
    return metadata


def _scopes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [s for s in value.replace(",", " ").split() if s]


async def start_login(services: Services, principal: Principal, provider_type: str, query: Mapping[str, str]) -> StartedLogin:
    """Store a login of ``provider_type`` for ``principal`` from the login's ``query`` (``account_id``,
    ``redirect_uri``, the provider's connection parameters by name, ``metadata``, ``scopes``,
    ``connection_id``). Raises :class:`HeldForApproval` when the workspace's approval policy holds it."""
    provider = service.provider_named(services, provider_type)
    workspace_id = principal.workspace_id
    account_id = query.get("account_id")
    if account_id and account_id != workspace_id:
        raise NotFound(f"Account not found: {account_id}")
    if provider.auth_mode != "oauth2":
        raise Invalid(f"{provider.display_name} does not connect with OAuth: use POST /connect/v1/providers/{provider.name}/connect")
    return_to = _check_return_to(query.get("redirect_uri"))
    handler = auth_for(services.registry, provider.name)
    deferred = handler.deferred_params(provider)
    params = service.split_params(provider, {k: v for k, v in query.items() if k in provider.connection_params}, None, learned=deferred)
    try:
        check_fillable(provider, params)
    except TemplateError as error:
        raise Invalid(str(error)) from None
    metadata = _metadata_query(query.get("metadata"))
    reconnect = query.get("connection_id")
    async with services.db.transaction(tenant=workspace_id) as session:
        if reconnect:
            row = await get_row(session, reconnect)
            if row.provider != provider.name:
                raise Invalid(f"Connection {reconnect} is not a {provider.name} connection")
        approval_id = await approvals.gate_connect(services, session, workspace_id=workspace_id, provider=provider.name, principal=principal, payload=None)
        if approval_id is None and not reconnect:
            await enforce_provider_limit(session, workspace_id, provider.name)
    if approval_id is not None:
        raise HeldForApproval(approval_id)
    oauth_app = await oauth_app_for(services, workspace_id=workspace_id, provider=provider.name)
    if oauth_app is None:
        raise Invalid(
            f"No OAuth app is configured for {provider.display_name}: save your own with POST /byoa/{provider.name}/credentials, "
            f"or set client_id and client_secret in [providers.{provider.name}]"
        )
    try:
        ctx = auth_context(services, provider, oauth_app, params)
    except UnvouchedHost as error:
        raise Invalid(error.message) from None
    scopes = _scopes(query.get("scopes"))
    if not scopes:
        scopes = await integrations.authorize_scopes(services, workspace_id=workspace_id, provider=provider, app=oauth_app)
    verifier, challenge = pkce_pair() if provider.pkce else (None, None)
    state_row = OAuthState(
        workspace_id=workspace_id,
        provider=provider.name,
        return_to=return_to,
        callback_uri=callback_url(services, provider.name),
        code_verifier=services.secrets.encrypt(verifier) if verifier else None,
        params=params,
        connection_id=reconnect,
        oauth_app=oauth_app.source,
        expires_at=utcnow() + STATE_LIFETIME,
        meta={"scopes": scopes, "requestedBy": principal.subject, "metadata": metadata},
    )
    async with services.db.transaction(tenant=workspace_id) as session:
        await session.execute(delete(OAuthState).where(OAuthState.expires_at < utcnow()))
        session.add(state_row)
        await session.flush()
        state = f"{state_row.id}.{state_mac(services, state_row)}"
        url = handler.authorization_url(ctx, redirect_uri=state_row.callback_uri, state=state, scopes=scopes, code_challenge=challenge)
        state_row.meta = {**state_row.meta, "authorizationUrl": url}
    return StartedLogin(state_id=state_row.id, authorization_url=url, begin_url=begin_url(services, provider.name, state), expires_at=state_row.expires_at)


async def pending_login(services: Services, provider_name: str, state: str) -> OAuthState | None:
    """The unexpired login ``state`` names, if it is genuine and of ``provider_name`` (kept: the callback uses it)."""
    state_id = state.partition(".")[0]
    async with services.db.session() as session:
        row = await session.scalar(select(OAuthState).where(OAuthState.id == state_id))
    if row is None or row.provider != provider_name or row.expires_at < utcnow() or not state_is_authentic(services, row, state):
        return None
    return row


async def workspace_name(services: Services, workspace_id: str) -> str:
    async with services.db.session() as session:
        return await session.scalar(select(Workspace.name).where(Workspace.id == workspace_id)) or workspace_id


async def take_state(services: Services, provider: str, state: str, bound_here: Callable[[str], bool]) -> OAuthState | None:
    """The login the state names, removed so that it works once; None when forged or unknown.
    Raises :class:`NotBound` when ``bound_here(state_id)`` says the browser did not start it."""
    state_id = state.partition(".")[0]
    async with services.db.transaction() as session:
        row = await session.scalar(select(OAuthState).where(OAuthState.id == state_id))
        if row is None or row.provider != provider or not state_is_authentic(services, row, state):
            return None
        if not bound_here(row.id):
            raise NotBound
        result = await session.execute(delete(OAuthState).where(OAuthState.id == state_id).execution_options(synchronize_session=False))
        if result.rowcount != 1:
            return None  # another callback with the same state got there first
    return row


async def finish_login(services: Services, provider: Provider, row: OAuthState, code: str) -> LoginOutcome:
    """Exchange the provider's ``code`` of the login ``row`` for tokens and store the connection;
    a refusal (of the provider, or of a plan limit reached since the login started) is the outcome's error."""
    oauth_app = await oauth_app_for(services, workspace_id=row.workspace_id, provider=provider.name, source=row.oauth_app)
    if oauth_app is None:
        return LoginOutcome(error="invalid_client", description=f"The OAuth app for {provider.display_name} is no longer configured.")
    verifier = services.secrets.decrypt(row.code_verifier) if row.code_verifier else None
    try:
        ctx = auth_context(services, provider, oauth_app, row.params)
        tokens = await auth_for(services.registry, provider.name).exchange_code(ctx, code=code, redirect_uri=row.callback_uri, code_verifier=verifier)
    except ProviderAuthError as error:
        return LoginOutcome(error=error.error or "exchange_failed", description=error.message)
    scopes = list(tokens.scopes) or list((row.meta or {}).get("scopes") or [])
    try:
        params = service.split_params(provider, {**row.params, **tokens.params}, None, from_caller=False)
    except DomainError as error:
        return LoginOutcome(error="invalid_request", description=f"{provider.display_name} did not supply every connection parameter: {error.message}")
    try:
        async with services.db.transaction(tenant=row.workspace_id) as session:
            connection = await save_connection(
                services,
                session,
                workspace_id=row.workspace_id,
                provider=provider.name,
                credentials=token_credentials(tokens),
                params=params,
                metadata={**dict(tokens.metadata), **((row.meta or {}).get("metadata") or {})},
                scopes=scopes,
                expires_at=tokens.expires_at,
                oauth_app=oauth_app.source,
                connection_id=row.connection_id,
            )
    except DomainError as error:  # a plan limit reached since the login started
        return LoginOutcome(error="connection_refused", description=error.message)
    return LoginOutcome(connection_id=connection.id)
