"""Sending email through the ``[smtp]`` settings (aiosmtplib), and the invite email job.

The invite token travels to the job encrypted (``SecretBox``), never in plain text in the queue.
"""

from __future__ import annotations

import logging
from email.message import EmailMessage
from typing import TYPE_CHECKING

import aiosmtplib

from patchbay.core.jobs.queue import JobContext, PermanentFailure, RetryLater
from patchbay.core.settings import Settings, SmtpSettings
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Invite, Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

INVITE_EMAIL_JOB = "workspaces.invite_email"


def install(services: Services) -> None:
    services.jobs.register(INVITE_EMAIL_JOB, send_invite_email, max_attempts=5)


class MailNotConfigured(RuntimeError):
    pass


async def send_mail(smtp: SmtpSettings, *, to: str, subject: str, text: str) -> None:
    if not smtp.host:
        raise MailNotConfigured("[smtp] host is not set")
    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = to
    message["Subject"] = subject
    message.set_content(text)
    await aiosmtplib.send(
        message,
        hostname=smtp.host,
        port=smtp.port,
        username=smtp.username,
        password=smtp.password,
        start_tls=smtp.starttls,
        use_tls=smtp.use_tls,
        timeout=30,
    )


def invite_url(settings: Settings, *, token: str, workspace_id: str) -> str:
    return settings.workspaces.invite_url.format(base_url=settings.public_base_url, token=token, workspace_id=workspace_id)


def link_url(settings: Settings, *, token: str, workspace_id: str) -> str:
    return settings.workspaces.link_url.format(base_url=settings.public_base_url, token=token, workspace_id=workspace_id)


async def send_invite_email(ctx: JobContext) -> None:
    """Job: email an invite. Skipped when the invite was already sent, used or has expired."""
    services = ctx.services
    settings = services.settings
    async with services.db.session() as session:
        invite = await session.get(Invite, ctx.payload["invite_id"])
        if invite is None or invite.email_sent_at is not None or invite.accepted_at is not None or invite.expires_at <= utcnow():
            return
        workspace = await session.get(Workspace, invite.workspace_id)
    token = services.secrets.decrypt(ctx.payload["token"])
    url = invite_url(settings, token=token, workspace_id=invite.workspace_id)
    brand = settings.branding.name
    text = (
        f"You have been invited to join {workspace.name} on {brand} as {invite.role}.\n\n"
        f"Accept the invitation: {url}\n\nInvite token: {token}\n\n"
        f"The invitation expires at {invite.expires_at.strftime('%Y-%m-%d %H:%M UTC')} and can be used once.\n"
    )
    try:
        await send_mail(settings.smtp, to=invite.email, subject=f"Invitation to join {workspace.name} on {brand}", text=text)
    except MailNotConfigured as error:
        raise PermanentFailure(str(error)) from None
    except (aiosmtplib.SMTPException, OSError) as error:
        raise RetryLater(min(300, 10 * ctx.attempt), f"SMTP: {error}") from None
    async with services.db.transaction() as session:
        invite = await session.get(Invite, invite.id)
        invite.email_sent_at = utcnow()
