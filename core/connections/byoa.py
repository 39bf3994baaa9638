"""Bring-your-own-app credentials (spec 4.20): a workspace's own OAuth client for a provider, used
by its OAuth logins and refreshes instead of the deployment's. The secret is stored encrypted and
never shown again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select

from patchbay.core.connections.models import ByoaCredential
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.plugins.provider import Provider
from patchbay.core.timeutil import iso

if TYPE_CHECKING:
    from patchbay.core.services import Services


async def _find(session, provider: str) -> ByoaCredential | None:
    return await session.scalar(select(ByoaCredential).where(ByoaCredential.provider == provider))


def _status(row: ByoaCredential | None, provider: str) -> dict[str, Any]:
    if row is None:
        return {"provider": provider, "configured": False}
    return {
        "provider": provider,
        "configured": True,
        "clientId": row.client_id,
        "scopes": row.scopes or [],
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


def require_oauth(provider: Provider) -> None:
    if provider.auth_mode not in ("oauth2",):
        raise Invalid(f"{provider.display_name} does not use an OAuth app")


async def save(
    services: Services, *, workspace_id: str, provider: Provider, client_id: str, client_secret: str, scopes: str | list[str] | None
) -> dict[str, Any]:
    """Save the workspace's OAuth app for ``provider`` (:func:`require_oauth`), replacing an earlier
    one (``scopes``: a list, or one string of space- or comma-separated scopes); answers its status."""
    require_oauth(provider)
    if not client_id.strip() or not client_secret:
        raise Invalid("Validation failed: clientId and clientSecret are required")
    if isinstance(scopes, str):
        scopes = [s for s in scopes.replace(",", " ").split() if s]
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await _find(session, provider.name)
        if row is None:
            row = ByoaCredential(provider=provider.name)
            session.add(row)
        row.client_id = client_id.strip()
        row.client_secret = services.secrets.encrypt(client_secret)
        row.scopes = list(scopes or [])
        await session.flush()
        return _status(row, provider.name)


async def status(services: Services, *, workspace_id: str, provider: str) -> dict[str, Any]:
    """Whether the workspace has its own OAuth app for ``provider`` (never the secret)."""
    async with services.db.session(tenant=workspace_id) as session:
        return _status(await _find(session, provider), provider)


async def configured_providers(services: Services, *, workspace_id: str) -> set[str]:
    """The providers the workspace has its own OAuth app for (the console's integrations page)."""
    async with services.db.session(tenant=workspace_id) as session:
        return set((await session.scalars(select(ByoaCredential.provider))).all())


@attrs.frozen
class Integration:
    """Whether a provider can connect in a workspace, and how its webhooks come in (never a secret)."""

    provider: Provider
    #: how a connection is made here: ``api_key``, ``oauth:workspace``, ``oauth:deployment``, or
    #: None when it cannot be (an OAuth provider without an app)
    connects_with: str | None
    #: where the provider sends its webhooks (None: it sends none)
    webhook_url: str | None
    webhook_secret_set: bool
    verify_token_set: bool


async def integrations(services: Services, *, workspace_id: str) -> list[Integration]:
    """Every installed provider, by display name: whether it can connect in the workspace (API key
    or basic credentials; an OAuth app of the workspace, else of the deployment), its webhook URL
    and whether the deployment's webhook secret is set (the console's integrations page)."""
    own = await configured_providers(services, workspace_id=workspace_id)
    base = services.settings.public_base_url.rstrip("/")
    found = []
    for provider in sorted(services.registry.providers.values(), key=lambda p: p.display_name.lower()):
        secrets = services.registry.provider_secrets(provider.name)
        if provider.auth_mode != "oauth2":
            connects = provider.auth_mode
        elif provider.name in own:
            connects = "oauth:workspace"
        elif secrets.client_id and secrets.client_secret:
            connects = "oauth:deployment"
        else:
            connects = None
        webhook_url = f"{base}/webhook/{provider.name}" if provider.webhooks else None
        found.append(Integration(provider, connects, webhook_url, bool(secrets.webhook_secret), bool(secrets.webhook_verify_token)))
    return found


async def scopes(services: Services, *, workspace_id: str, provider: str) -> list[str] | None:
    """The scopes saved with the workspace's own OAuth app for ``provider``, if any."""
    async with services.db.session(tenant=workspace_id) as session:
        saved = await session.scalar(select(ByoaCredential.scopes).where(ByoaCredential.provider == provider))
    return list(saved) if saved else None


async def delete(services: Services, *, workspace_id: str, provider: str) -> None:
    """Remove the workspace's OAuth app for ``provider`` (later logins use the deployment's)."""
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await _find(session, provider)
        if row is None:
            raise NotFound(f"No BYOA credentials for {provider}")
        await session.delete(row)
