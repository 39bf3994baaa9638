"""Creating users and checking passwords (argon2id through argon2-cffi)."""

from __future__ import annotations

import functools
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid
from patchbay.core.users.models import User
from patchbay.core.users.sessions import end_user_sessions

_hasher = PasswordHasher()


class UserError(Invalid):
    """The email address or the password of a new user is not acceptable."""


class UserExists(Conflict):
    """A user with this email address exists already."""


def hash_password(password: str) -> str:
    return _hasher.hash(password)


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash(secrets.token_urlsafe(16))


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches; without a hash (unknown user, no password) a dummy one is
    checked anyway, so the answer takes as long and timing does not tell whether an account exists."""
    try:
        return _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def normalise_email(email: str) -> str:
    return email.strip().lower()


async def find_user_by_email(session: AsyncSession, email: str) -> User | None:
    return await session.scalar(select(User).where(func.lower(User.email) == normalise_email(email)))


async def create_user(session: AsyncSession, *, email: str, password: str | None, name: str | None = None, **profile) -> User:
    email = normalise_email(email)
    if "@" not in email:
        raise UserError(f"{email!r} is not an email address")
    if password is not None and len(password) < 8:
        raise UserError("password must have at least 8 characters")
    if await find_user_by_email(session, email):
        raise UserExists(f"a user with email {email} already exists")
    given, _, family = (name or "").partition(" ")
    user = User(
        email=email,
        password_hash=hash_password(password) if password else None,
        name=name,
        given_name=profile.pop("given_name", None) or (given or None),
        family_name=profile.pop("family_name", None) or (family or None),
        **profile,
    )
    session.add(user)
    await session.flush()
    return user


async def list_users(session: AsyncSession) -> list[User]:
    """Every user, oldest first (the operator's view)."""
    return list((await session.scalars(select(User).order_by(User.created_at, User.id))).all())


async def find_user(session: AsyncSession, id_or_email: str) -> User | None:
    """A user by id, or by e-mail address when the value has an ``@``."""
    if "@" in id_or_email:
        return await find_user_by_email(session, id_or_email)
    return await session.get(User, id_or_email)


async def delete_user(session: AsyncSession, user: User) -> None:
    """Delete a user; memberships, grants and sessions go with it through the foreign keys."""
    await session.delete(user)
    await session.flush()


async def change_password(session: AsyncSession, user: User, password: str) -> None:
    """Set ``user``'s password and end all their sign-in sessions (whoever knew the old one is out)."""
    user.password_hash = hash_password(password)
    await end_user_sessions(session, user.id)
