"""API keys: random, shown once, stored as a keyed digest with a display prefix."""

from __future__ import annotations

import attrs
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.models import ApiKey
from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.timeutil import utcnow

KEY_PREFIX = "pb_"


@attrs.frozen
class IssuedKey:
    record: ApiKey
    key: str  # the only time the plaintext exists


class UnknownPermission(ValueError):
    pass


async def create_api_key(session: AsyncSession, box: SecretBox, *, workspace_id: str, name: str, permissions: list[str] | None = None) -> IssuedKey:
    granted = list(permissions) if permissions else list(PERMISSIONS)
    unknown = sorted(set(granted) - set(PERMISSIONS))
    if unknown:
        raise UnknownPermission(f"unknown permission(s): {', '.join(unknown)}")
    key = KEY_PREFIX + random_token(32)
    record = ApiKey(workspace_id=workspace_id, name=name, prefix=key[:10], key_digest=box.digest(key), permissions=granted)
    session.add(record)
    await session.flush()
    return IssuedKey(record=record, key=key)


async def find_api_key(session: AsyncSession, box: SecretBox, key: str) -> ApiKey | None:
    """The active key record matching the presented key, under any configured secret."""
    if not key.startswith(KEY_PREFIX):
        return None
    return await session.scalar(select(ApiKey).where(ApiKey.key_digest.in_(box.digests(key)), ApiKey.revoked_at.is_(None)))


async def revoke_api_key(session: AsyncSession, key_id: str) -> bool:
    result = await session.execute(update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None)).values(revoked_at=utcnow()))
    return result.rowcount > 0
