"""The database: one async engine for SQLite (aiosqlite) or PostgreSQL (asyncpg), and sessions.

SQLite runs in WAL mode with foreign keys on and a busy timeout, so a web process, its workers and
the CLI can share one file. On PostgreSQL many processes share the database; a pooled connection
idle for more than ``IDLE_PING_SECONDS`` is pinged when checked out (a dead one is replaced before
use), a connection in steady use is not (a ping per checkout was a round trip per transaction).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

from patchbay.core.storage.base import TENANT_KEY, guard_tenancy

SQLITE_BUSY_TIMEOUT_MS = 30_000
IDLE_PING_SECONDS = 5.0
_RETURNED_AT = "patchbay.returned_at"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_engine(url: str, **kwargs) -> AsyncEngine:
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    engine = create_async_engine(url, pool_size=10, max_overflow=20, **kwargs)
    event.listen(engine.sync_engine, "connect", _returned)
    event.listen(engine.sync_engine, "checkin", _returned)
    event.listen(engine.sync_engine, "checkout", _ping_if_idle)
    return engine


def _returned(_dbapi_connection, record) -> None:
    if record is not None:
        record.info[_RETURNED_AT] = time.monotonic()


def _ping_if_idle(dbapi_connection, record, _proxy) -> None:
    """Ping a connection back from more than ``IDLE_PING_SECONDS`` in the pool; if it is dead, the
    pool replaces it (``DisconnectionError``) before anyone uses it."""
    if time.monotonic() - record.info.get(_RETURNED_AT, float("-inf")) <= IDLE_PING_SECONDS:
        return
    try:
        dbapi_connection.ping()
    except Exception as error:
        raise exc.DisconnectionError(f"a pooled connection was dead: {error!r}") from error


class Database:
    """The engine and a session factory. ``session(tenant=...)`` scopes every ORM query to one
    workspace (see ``storage.base``); ``session()`` without a tenant is for system work (jobs, CLI).

    Its sessions are of its own ``Session`` subclass, :attr:`session_class`: the session events a
    part of patchbay listens to (the tenancy guard, the job queue's wake-up) are attached to it, so
    two databases in one process never share them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        #: what a service handed only a session needs of the app owning this database (billing's
        #: plan limits): every session's ``info`` starts with these entries
        self.context: dict[str, Any] = {}
        self.session_class: type[Session] = type("DatabaseSession", (Session,), {})
        guard_tenancy(self.session_class)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False, info=self.context, sync_session_class=self.session_class)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    def session(self, *, tenant: str | None = None) -> AsyncSession:
        session = self._sessions()
        if tenant is not None:
            session.info[TENANT_KEY] = tenant
        return session

    @contextlib.asynccontextmanager
    async def transaction(self, *, tenant: str | None = None) -> AsyncIterator[AsyncSession]:
        """A session in a transaction that commits on success and rolls back on error."""
        async with self.session(tenant=tenant) as session, session.begin():
            yield session

    async def close(self) -> None:
        await self.engine.dispose()
