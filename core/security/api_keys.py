"""API keys: random, shown once, stored as a keyed digest with a display prefix.

A key works while it is neither revoked nor past its optional ``expires_at``. Listing never shows
the key or its digest. Revocation is checked on every database read of a key; processes remember a
verified key for ``security.service.API_KEY_CACHE_SECONDS``, so a revoked key stops working everywhere
within that time (at once in the process that revoked it).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.models import ApiKey
from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.timeutil import iso, utcnow

KEY_PREFIX = "pb_"


@attrs.frozen
class IssuedKey:
    record: ApiKey
    key: str  # the only time the plaintext exists


class UnknownPermission(ValueError):
    pass


async def create_api_key(
    session: AsyncSession, box: SecretBox, *, workspace_id: str, name: str, permissions: list[str] | None = None, expires_in: timedelta | None = None
) -> IssuedKey:
    granted = list(permissions) if permissions else list(PERMISSIONS)
    unknown = sorted(set(granted) - set(PERMISSIONS))
    if unknown:
        raise UnknownPermission(f"unknown permission(s): {', '.join(unknown)}")
    if expires_in is not None and expires_in <= timedelta(0):
        raise ValueError("expiry must be in the future")
    key = KEY_PREFIX + random_token(32)
    expires_at = utcnow() + expires_in if expires_in is not None else None
    record = ApiKey(workspace_id=workspace_id, name=name, prefix=key[:10], key_digest=box.digest(key), permissions=granted, expires_at=expires_at)
    session.add(record)
    await session.flush()
    return IssuedKey(record=record, key=key)


async def find_api_key(session: AsyncSession, box: SecretBox, key: str) -> ApiKey | None:
    """The active (not revoked, not expired) key record matching the presented key, under any configured secret."""
    if not key.startswith(KEY_PREFIX):
        return None
    return await session.scalar(
        select(ApiKey).where(
            ApiKey.key_digest.in_(box.digests(key)), ApiKey.revoked_at.is_(None), or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > utcnow())
        )
    )


async def list_api_keys(session: AsyncSession, workspace_id: str) -> list[ApiKey]:
    """Every key of a workspace, revoked and expired ones included, newest first."""
    return list(await session.scalars(select(ApiKey).where(ApiKey.workspace_id == workspace_id).order_by(ApiKey.created_at.desc(), ApiKey.id)))


async def revoke_api_key(session: AsyncSession, key_id: str, *, workspace_id: str | None = None) -> bool:
    """Revoke a key (of ``workspace_id`` when given); False when there is no such active key."""
    statement = update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
    if workspace_id is not None:
        statement = statement.where(ApiKey.workspace_id == workspace_id)
    result = await session.execute(statement.values(revoked_at=utcnow()))
    return result.rowcount > 0


def api_key_state(record: ApiKey) -> str:
    if record.revoked_at is not None:
        return "revoked"
    if record.expires_at is not None and record.expires_at <= utcnow():
        return "expired"
    return "active"


def api_key_json(record: ApiKey) -> dict[str, Any]:
    """The listed form of a key: never the key itself nor its digest."""
    return {
        "id": record.id,
        "workspaceId": record.workspace_id,
        "name": record.name,
        "prefix": record.prefix,
        "permissions": list(record.permissions),
        "status": api_key_state(record),
        "createdAt": iso(record.created_at),
        "expiresAt": iso(record.expires_at),
        "lastUsedAt": iso(record.last_used_at),
        "revokedAt": iso(record.revoked_at),
    }
