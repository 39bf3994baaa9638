"""The ``leads`` data eraser of a deletion request (core/compliance): a signed-in user who asks
for their data to be deleted also loses the leads captured with their email address, in every
workspace, with their CRM sync records; the lead copied into forwarded events (and into the
bytes their deliveries send) is removed too. A Meta request names an app-scoped user id, which
leads do not carry: nothing matches."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.users.models import User
from patchbay.core.webhooks.delivery import erase_lead_from_bodies
from patchbay.core.webhooks.models import WebhookEvent


async def erase_leads(session: AsyncSession, request) -> int:
    if request.source != "user":
        return 0
    email = await session.scalar(select(User.email).where(User.id == request.subject))
    if not email:
        return 0
    lead_ids = list((await session.scalars(select(Lead.id).where(Lead.email == email.strip().lower()))).all())
    if not lead_ids:
        return 0
    events = (await session.scalars(select(WebhookEvent).where(WebhookEvent.lead_id.in_(lead_ids)))).all()
    for event in events:
        if event.payload and "lead" in event.payload:
            event.payload = {key: value for key, value in event.payload.items() if key != "lead"}
    if events:
        await erase_lead_from_bodies(session, [event.id for event in events])
    await session.execute(delete(LeadSync).where(LeadSync.lead_id.in_(lead_ids)))
    return (await session.execute(delete(Lead).where(Lead.id.in_(lead_ids)))).rowcount or 0
