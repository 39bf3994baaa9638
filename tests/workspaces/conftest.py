"""Fixtures of the workspaces tests: a local SMTP server (aiosmtpd) collecting messages, users with
access tokens."""

from __future__ import annotations

import asyncio
import email
from email.message import Message

import pytest
from aiosmtpd.smtp import SMTP

from patchbay.core.appkeys import SERVICES
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.testing import sign_access_token
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.arrived = asyncio.Event()

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content))
        self.arrived.set()
        return "250 OK"

    async def wait(self, count: int = 1, timeout: float = 10.0) -> list[Message]:
        async def until() -> None:
            while len(self.messages) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(until(), timeout)
        return self.messages


@pytest.fixture
async def smtp_server():
    """``(host, port, inbox)`` of an SMTP server on 127.0.0.1."""
    inbox = _Inbox()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(inbox), "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    yield host, port, inbox
    server.close()
    await server.wait_closed()


@pytest.fixture
def make_user():
    """``await make_user(app, email)`` -> ``(user_id, headers)`` of a signed-in user (no workspace);
    with ``organization_id`` and ``role``, a member of that workspace with that role, whose token
    carries the role's permissions there."""

    async def make(app, address: str, *, organization_id: str | None = None, permissions=(), role: str | None = None):
        async with app[SERVICES].db.transaction() as session:
            user = await create_user(session, email=address, password=None, name="Test User")
            if role is not None:
                await add_member(session, workspace_id=organization_id, user_id=user.id, role=role)
                permissions = sorted(ROLE_PERMISSIONS[role])
        claims = {"sub": user.id, "client_id": "console", "permissions": list(permissions)}
        if organization_id:
            claims["organization_id"] = organization_id
        token = await sign_access_token(app, claims)
        return user.id, {"Authorization": f"Bearer {token}"}

    return make
