"""The identity provider's services: its runtime parts (the authlib server, the client cache), the
hourly purge of ended sign-in sessions, and the reads and writes its endpoints and pages ask for
(clients, codes and refresh tokens, consents, sign-in sessions, sign-out, federated users)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.identity.claims import UserFacts, load_user_facts, scope_list
from patchbay.core.identity.clients import Client, ClientCache, borrows_a_name
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.metadata_documents import document_client, is_metadata_url, row_id
from patchbay.core.identity.models import AuthorizationCode, Consent, FederatedIdentity, Grant, RefreshToken
from patchbay.core.identity.server import CodeView, Context, PatchbayAuthorizationServer, RefreshView, ServiceClaims, WriteConflict, apply_writes, revoke_grant
from patchbay.core.jobs.cron import CronJob
from patchbay.core.mcp.grants import Grant as Agent
from patchbay.core.mcp.models import AgentGrant
from patchbay.core.shared_reads import SharedReads
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.users.service import find_user_by_email, normalise_email, verify_password
from patchbay.core.users.sessions import LiveSession, end_session, find_session, purge_sessions, start_session

if TYPE_CHECKING:
    from patchbay.core.services import Services


@attrs.define(eq=False)
class IdentityRuntime:
    """What the identity provider keeps while it runs: authlib's server, the clients read lately and
    the client_credentials claims encoded so far."""

    server: PatchbayAuthorizationServer
    clients: ClientCache
    service_claims: ServiceClaims = attrs.field(factory=ServiceClaims)
    #: clients of Client ID Metadata Documents by URL, each kept as long as its document allows
    documents: SharedReads[str, Client] = attrs.field(factory=SharedReads)


def install(services: Services) -> None:
    services.identity = IdentityRuntime(PatchbayAuthorizationServer(services.settings.resolved_issuer), ClientCache(services.secrets))
    services.cron.add(CronJob("identity-sessions", 3600, purge_ended_sessions))


async def purge_ended_sessions(services: Services) -> dict[str, int]:
    async with services.db.transaction() as session:
        return {"sessionsPurged": await purge_sessions(session)}


# -- clients and the protocol context -------------------------------------------------------------


async def load_client(services: Services, client_id: str | None) -> Client | None:
    """A stored client: registered, or of a metadata document fetched before (its URL as ``client_id``)."""
    if not client_id:
        return None
    if is_metadata_url(client_id):
        client = await services.identity.clients.get(services.db.session, row_id(client_id))
        return client if client is not None and client.metadata_url == client_id else None
    return await services.identity.clients.get(services.db.session, client_id)


async def resolve_client(services: Services, client_id: str | None) -> Client | None:
    """The client of an authorization request: as :func:`load_client`, but a URL
    ``client_id`` has its metadata document fetched (or kept from a fetch its cache time allows);
    :class:`~core.identity.metadata_documents.MetadataDocumentError` when that document cannot be used."""
    if is_metadata_url(client_id):
        return await document_client(services, client_id)
    return await load_client(services, client_id)


def new_context(services: Services) -> Context:
    return Context(issuer=services.settings.resolved_issuer, keys=services.signing_keys, box=services.secrets, service_claims=services.identity.service_claims)


async def user_facts(services: Services, user_id: str) -> UserFacts | None:
    async with services.db.session() as session:
        return await load_user_facts(session, user_id)


async def load_code(services: Services, ctx: Context, code: str | None) -> None:
    """Put the authorization code ``code`` and its user on ``ctx``, when they exist."""
    if not code:
        return
    async with services.db.session() as session:
        row = await session.scalar(select(AuthorizationCode).where(AuthorizationCode.code_digest.in_(services.secrets.digests(code))))
        if row is None:
            return
        ctx.code = CodeView.from_row(row)
        facts = await load_user_facts(session, row.user_id)
    if facts is not None:
        ctx.users[facts.id] = facts


async def load_refresh(services: Services, ctx: Context, token: str | None) -> None:
    """Put the refresh token ``token``, its grant's state and its user on ``ctx``, when they exist."""
    if not token:
        return
    async with services.db.session() as session:
        found = (
            await session.execute(
                select(RefreshToken, Grant).join(Grant, Grant.id == RefreshToken.grant_id).where(RefreshToken.token_digest.in_(services.secrets.digests(token)))
            )
        ).first()
        if found is None:
            return
        row, grant = found
        revoked = grant.revoked_at is not None or await _agent_grant_ended(session, grant)
        ctx.refresh = RefreshView(
            row.id,
            row.grant_id,
            row.client_id,
            row.user_id,
            row.scope,
            row.expires_at.timestamp(),
            row.revoked_at is not None,
            row.rotated_at is not None,
            revoked,
            grant.auth_time,
            token,
            int(row.created_at.timestamp()),
            grant.resource,
        )
        facts = await load_user_facts(session, row.user_id)
    if facts is not None:
        ctx.users[facts.id] = facts


async def finish_token_request(services: Services, ctx: Context) -> None:
    """Revoke the grant of a replayed code or refresh token and apply the writes the grant queued.
    When the same code or rotated refresh token won a race elsewhere, revoke what it issued (as for
    a reuse) and refuse with ``invalid_grant``."""
    try:
        if ctx.revoke_grant:
            async with services.db.transaction() as session:
                await revoke_grant(session, ctx.revoke_grant)
        await apply_writes(services.db, ctx)
    except WriteConflict:
        async with services.db.transaction() as session:
            grant_id = ctx.refresh.grant_id if ctx.refresh is not None else None
            if ctx.code is not None:
                grant_id = await session.scalar(select(AuthorizationCode.grant_id).where(AuthorizationCode.id == ctx.code.id))
            if grant_id:
                await revoke_grant(session, grant_id)
        raise OAuthRefusal("the grant was already used", error="invalid_grant") from None


async def grant_revoked(services: Services, claims: dict) -> bool:
    """Whether the grant an access token names is gone or revoked (False for a token of no grant)."""
    grant_id = claims.get("grant_id")
    if not grant_id:
        return False
    async with services.db.session() as session:
        grant = await session.get(Grant, grant_id)
        return grant is None or grant.revoked_at is not None or await _agent_grant_ended(session, grant)


async def _agent_grant_ended(session: AsyncSession, grant: Grant) -> bool:
    """For an agent's grant (one of a resource): whether its agent grant was revoked or expired on
    its own (from the MCP side, ``core.mcp.grants.revoke_grant``)."""
    if not grant.resource:
        return False
    agent = await session.get(AgentGrant, grant.id)
    return agent is None or not Agent.from_row(agent).is_active()


# -- consent --------------------------------------------------------------------------------------


async def consent_covers(services: Services, user_id: str, client_id: str, scope: str) -> bool:
    async with services.db.session() as session:
        stored = await session.scalar(select(Consent.scopes).where(Consent.user_id == user_id, Consent.client_id == client_id))
    return stored is not None and set(scope_list(scope)) <= set(stored)


async def remember_consent(services: Services, user_id: str, client_id: str, scopes: list[str]) -> None:
    """Add ``scopes`` to what the user allowed the client."""
    async with services.db.transaction() as session:
        row = await session.scalar(select(Consent).where(Consent.user_id == user_id, Consent.client_id == client_id))
        if row is None:
            session.add(Consent(user_id=user_id, client_id=client_id, scopes=sorted(set(scopes))))
        else:
            row.scopes = sorted(set(row.scopes) | set(scopes))


async def client_borrows_a_name(services: Services, client: Client) -> bool:
    """Whether a self-registered client's name reads as the deployment's or an operator's client's."""
    async with services.db.session() as session:
        return await borrows_a_name(session, client, services.settings.branding.name)


# -- sign-in sessions -----------------------------------------------------------------------------


async def check_password(services: Services, email: str, password: str) -> str | None:
    """The id of the user of ``email`` when ``password`` is theirs; else None (as slowly either way)."""
    async with services.db.session() as session:
        user = await find_user_by_email(session, email) if email else None
    ok = await asyncio.to_thread(verify_password, user.password_hash if user else None, password)
    return user.id if ok else None


async def session_of_token(services: Services, token: str) -> LiveSession | None:
    async with services.db.session() as session:
        return await find_session(session, services.secrets, token)


async def sign_in(services: Services, user_id: str, lifetime: int, *, previous: LiveSession | None) -> tuple[str, LiveSession]:
    """A new sign-in session of ``user_id`` (its token and the session); ``previous`` ends."""
    async with services.db.transaction() as session:
        if previous is not None:
            await end_session(session, previous.id)
        return await start_session(session, services.secrets, user_id, lifetime)


async def sessions_of_grant(services: Services, grant_id: str | None) -> set[str]:
    """The sign-in session the grant ``grant_id`` was issued in (none for no such grant)."""
    if not grant_id:
        return set()
    async with services.db.session() as session:
        found = await session.scalar(select(AuthorizationCode.session_id).where(AuthorizationCode.grant_id == grant_id))
    return {found} if found else set()


async def sign_out(services: Services, session_ids: set[str]) -> None:
    """End the sign-in sessions and revoke the grants (and their refresh tokens) issued in them."""
    if not session_ids:
        return
    issued = select(AuthorizationCode.grant_id).where(AuthorizationCode.session_id.in_(session_ids), AuthorizationCode.grant_id.is_not(None))
    now = utcnow()
    async with services.db.transaction() as session:
        for session_id in session_ids:
            await end_session(session, session_id)
        await session.execute(update(Grant).where(Grant.id.in_(issued), Grant.revoked_at.is_(None)).values(revoked_at=now))
        await session.execute(update(RefreshToken).where(RefreshToken.grant_id.in_(issued), RefreshToken.revoked_at.is_(None)).values(revoked_at=now))


async def revoke_refresh_tokens(services: Services, user_id: str, client_id: str) -> None:
    """Revoke every refresh token the client holds for the user."""
    async with services.db.transaction() as session:
        await session.execute(
            update(RefreshToken)
            .where(RefreshToken.user_id == user_id, RefreshToken.client_id == client_id, RefreshToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )


# -- federated login ------------------------------------------------------------------------------


async def link_federated_user(services: Services, idp: str, claims: dict[str, Any]) -> str:
    """The local user of an upstream identity: linked before, matched by email when the upstream
    says ``email_verified: true`` (a JSON boolean; any other value is unverified) and the local
    account's address is verified too, or new. An unverified account of that address may have been
    made by someone else (a platform client, with a password it knows): it is never handed over."""
    subject = str(claims["sub"])
    async with services.db.transaction() as session:
        link = await session.scalar(select(FederatedIdentity).where(FederatedIdentity.provider == idp, FederatedIdentity.subject == subject))
        if link is not None:
            return link.user_id
        email = claims.get("email") if isinstance(claims.get("email"), str) else None
        verified = claims.get("email_verified") is True  # JSON true only: some upstreams send the string "false"
        user = await find_user_by_email(session, email) if email and verified else None
        if user is not None and not user.email_verified:
            user = None
        if user is None:
            address = normalise_email(email) if email and not await find_user_by_email(session, email) else f"{idp}.{subject}@federated.invalid"
            user = User(
                email=address,
                password_hash=None,
                name=claims.get("name"),
                given_name=claims.get("given_name"),
                family_name=claims.get("family_name"),
                picture=claims.get("picture"),
                email_verified=verified and address == email,
            )
            session.add(user)
            await session.flush()
        session.add(FederatedIdentity(provider=idp, subject=subject, user_id=user.id))
        return user.id
