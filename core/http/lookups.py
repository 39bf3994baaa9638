"""Loading one row for a handler: the row, or the 404 envelope naming what was not found."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.http.errors import not_found

T = TypeVar("T")


async def get_or_404(session: AsyncSession, model: type[T], row_id: str, message: str) -> T:
    """``session.get(model, row_id)``, or 404 with ``message``. Through a tenant session another
    workspace's row is not found either."""
    row = await session.get(model, row_id)
    if row is None:
        raise not_found(message)
    return row
