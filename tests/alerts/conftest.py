"""Fixtures of the alert tests: a local SMTP server (aiosmtpd) with the mailbox it fills, and local
receivers of webhook and chat alerts (``receivers``, from the Meta pack's fixtures, with the
webhook pipeline's app and helpers the operator-event tests use)."""

from __future__ import annotations

import asyncio
import socket
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller

from patchbay.providers.meta.fixtures import fast_webhooks, graph, helpers, receivers, wh_app  # noqa: F401


class Mailbox:
    """What the SMTP server accepted: ``(recipients, message)`` pairs; ``arrived`` is set by the first."""

    def __init__(self):
        self.messages = []
        self.arrived = asyncio.Event()

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        self.arrived.set()
        return "250 OK"


@pytest.fixture
def smtp_server():
    """``(port, mailbox)`` of an SMTP server on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield port, mailbox
    controller.stop()


@pytest.fixture
async def receiver(receivers):  # noqa: F811
    """One receiver answering 200 to every POST."""
    return await receivers()
