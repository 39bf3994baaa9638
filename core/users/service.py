"""Creating users and checking passwords (argon2id through argon2-cffi)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.users.models import User

_hasher = PasswordHasher()


class UserError(ValueError):
    pass


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    if not password_hash:
        return False
    try:
        return _hasher.verify(password_hash, password)
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
        raise UserError(f"a user with email {email} already exists")
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
