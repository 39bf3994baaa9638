"""Server-side sign-in sessions: start one (the caller puts the returned token in a cookie), find
the live one of a token, end one or all of a user's. Tokens are looked up by their digest under
every configured secret key, so rotating ``PATCHBAY_SECRET_KEY`` keeps sessions alive."""

from __future__ import annotations

import time
from datetime import timedelta

import attrs
from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import SignInSession, User


@attrs.frozen
class LiveSession:
    id: str
    user_id: str
    auth_time: int


async def start_session(db: AsyncSession, box: SecretBox, user_id: str, lifetime: int) -> tuple[str, LiveSession]:
    """A new session of ``user_id``: the token for the cookie and the session."""
    token = random_token(32)
    row = SignInSession(token_digest=box.digest(token), user_id=user_id, auth_time=int(time.time()), expires_at=utcnow() + timedelta(seconds=lifetime))
    db.add(row)
    await db.flush()
    return token, LiveSession(row.id, user_id, row.auth_time)


async def find_session(db: AsyncSession, box: SecretBox, token: str) -> LiveSession | None:
    """The live (not ended, not expired) session of ``token`` whose user still exists."""
    row = await db.scalar(
        select(SignInSession)
        .join(User, User.id == SignInSession.user_id)
        .where(SignInSession.token_digest.in_(box.digests(token)), SignInSession.ended_at.is_(None), SignInSession.expires_at > utcnow())
    )
    return LiveSession(row.id, row.user_id, row.auth_time) if row is not None else None


async def end_session(db: AsyncSession, session_id: str) -> None:
    await db.execute(update(SignInSession).where(SignInSession.id == session_id, SignInSession.ended_at.is_(None)).values(ended_at=utcnow()))


async def end_user_sessions(db: AsyncSession, user_id: str) -> None:
    """End every session of ``user_id`` (after a password change, for instance)."""
    await db.execute(update(SignInSession).where(SignInSession.user_id == user_id, SignInSession.ended_at.is_(None)).values(ended_at=utcnow()))


async def purge_sessions(db: AsyncSession) -> int:
    """Delete ended and expired sessions (nothing can bring them back); how many went."""
    result = await db.execute(delete(SignInSession).where(or_(SignInSession.ended_at.is_not(None), SignInSession.expires_at <= utcnow())))
    return result.rowcount or 0
