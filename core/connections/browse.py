"""The connections as the console browses them: a keyset-paged, filtered and searchable list with
each connection's last use, and one connection's detail (its credential's kind, never a value),
refresh history and recent calls."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import Text, and_, cast, func, or_, select

from patchbay.core.connections.models import Connection, ProxyCallLog
from patchbay.core.connections.store import decrypt_credentials, get_row
from patchbay.core.errors import Invalid
from patchbay.core.timeline import Key

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: metadata keys that name the account a connection reaches, in the order they are preferred
LABEL_KEYS = ("displayName", "display_name", "name", "accountName", "account_name", "page_name", "email", "username")
#: what each stored credential field is called on the page (its value is never read out)
CREDENTIAL_FIELDS = {
    "access_token": "access token",
    "refresh_token": "refresh token",
    "api_key": "API key",
    "api_secret": "API secret",
    "username": "username",
    "password": "password",
    "client_id": "client id",
    "client_secret": "client secret",
}
AUTH_MODES = {"oauth2": "OAuth 2.0", "oauth2_cc": "OAuth 2.0 client credentials", "api_key": "API key", "basic": "HTTP Basic", "none": "No credential"}


def account_label(meta: dict[str, Any] | None) -> str | None:
    """The account a connection reaches, from its metadata (``displayName``, ``name``, ``email``...)."""
    for key in LABEL_KEYS:
        value = (meta or {}).get(key)
        if isinstance(value, str | int) and str(value).strip():
            return str(value)[:120]
    return None


@attrs.frozen
class Listed:
    connection: Connection
    last_used_at: datetime | None

    @property
    def key(self) -> Key:
        return Key(self.connection.created_at, self.connection.id)


async def connection_list(
    services: Services,
    *,
    workspace_id: str,
    provider: str | None = None,
    status: str | None = None,
    end_user_id: str | None = None,
    search: str | None = None,
    before: Key | None = None,
    limit: int = 50,
) -> tuple[list[Listed], Key | None]:
    """A page of the workspace's connections, newest first, after ``before`` (the key of the last
    one seen), and the key to ask the next page with (None on the last page). ``search`` matches an
    id exactly, or a part of the provider's name, the end user's id or the metadata."""
    conditions = [Connection.workspace_id == workspace_id]
    if provider:
        conditions.append(Connection.provider == provider)
    if status:
        conditions.append(Connection.status == status)
    if end_user_id:
        conditions.append(Connection.end_user_id == end_user_id)
    if search:
        if len(search) > 200:
            raise Invalid("Query parameter 'q' must be at most 200 characters")
        pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        conditions.append(
            or_(
                Connection.id == search,
                Connection.provider.ilike(pattern, escape="\\"),
                Connection.end_user_id.ilike(pattern, escape="\\"),
                func.lower(cast(Connection.meta, Text)).like(pattern.lower(), escape="\\"),
            )
        )
    if before is not None:
        # the plain bound beside the OR lets the (workspace_id, created_at) index start at the key
        conditions += [
            Connection.created_at <= before.at,
            or_(Connection.created_at < before.at, and_(Connection.created_at == before.at, Connection.id < before.id)),
        ]
    await services.connections.audit.flush()  # the last use of a call whose audit row is still buffered
    async with services.db.session(tenant=workspace_id) as session:
        rows = list(await session.scalars(select(Connection).where(*conditions).order_by(Connection.created_at.desc(), Connection.id.desc()).limit(limit + 1)))
        more = len(rows) > limit
        rows = rows[:limit]
        used = await _last_used(session, [row.id for row in rows])
    listed = [Listed(row, used.get(row.id)) for row in rows]
    return listed, (listed[-1].key if more and listed else None)


async def _last_used(session, connection_ids: list[str]) -> dict[str, datetime]:
    """The moment of each connection's last call (the audit's ``(connection_id, created_at)`` index)."""
    if not connection_ids:
        return {}
    rows = await session.execute(
        select(ProxyCallLog.connection_id, func.max(ProxyCallLog.created_at))
        .where(ProxyCallLog.connection_id.in_(connection_ids))
        .group_by(ProxyCallLog.connection_id)
    )
    return {connection_id: moment for connection_id, moment in rows.all() if moment is not None}


@attrs.frozen
class Detail:
    """One connection as its console page shows it."""

    connection: Connection
    #: what the stored credential holds, by name ("access token", "refresh token"); never a value
    credential_fields: list[str]
    last_used_at: datetime | None
    refreshes: list[ProxyCallLog]
    calls: list[ProxyCallLog]


async def connection_detail(services: Services, *, workspace_id: str, connection_id: str, limit: int = 20) -> Detail:
    """The workspace's connection (``ConnectionNotFound`` for another workspace's) with its
    credential's field names, its last refreshes and its last calls (newest first)."""
    await services.connections.audit.flush()
    async with services.db.session(tenant=workspace_id) as session:
        row = await get_row(session, connection_id)
        audit = select(ProxyCallLog).where(ProxyCallLog.connection_id == row.id).order_by(ProxyCallLog.created_at.desc(), ProxyCallLog.id.desc())
        refreshes = list(await session.scalars(audit.where(ProxyCallLog.source == "refresh").limit(limit)))
        calls = list(await session.scalars(audit.where(ProxyCallLog.source != "refresh").limit(limit)))
        used = await _last_used(session, [row.id])
    try:
        stored = decrypt_credentials(services, row.credentials)
    except ValueError:  # DecryptionError, or not JSON: the page still opens
        stored = {}
    fields = [CREDENTIAL_FIELDS.get(name, name.replace("_", " ")) for name in sorted(stored) if stored[name] not in (None, "") and name != "token_type"]
    return Detail(row, fields, used.get(row.id), refreshes, calls)
