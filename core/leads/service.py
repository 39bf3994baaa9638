"""The leads domain's services: what the lead routes ask for, in the workspace's own session, and
what the domain installs (the import job, the ``resume-imports`` cron job, the ``leads`` data
eraser). Storing, cleaning and deduplicating leads is ``core.leads.store``."""

from __future__ import annotations

from patchbay.core.compliance.service import register_eraser
from patchbay.core.crm_push.service import schedule_push
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.jobs.cron import CronJob
from patchbay.core.leads.erase import erase_leads
from patchbay.core.leads.imports import IMPORT_JOB, import_job, resume_imports
from patchbay.core.leads.models import CRM_SYNC_STATUSES, Lead, LeadSync
from patchbay.core.leads.store import list_leads, syncs_of
from patchbay.core.services import Services


def install(services: Services) -> None:
    services.jobs.register(IMPORT_JOB, import_job, max_attempts=5, backoff_base=2.0, backoff_cap=120.0)
    services.cron.add(CronJob("resume-imports", 300, resume_imports))
    register_eraser(services, "leads", erase_leads)


async def leads_page(
    services: Services, workspace_id: str, *, page: int, limit: int, status: str | None, provider: str | None, search: str | None
) -> tuple[list[Lead], int]:
    """:func:`~patchbay.core.leads.store.list_leads` of the workspace; Invalid for a ``status``
    that is not a CRM sync status."""
    if status and status not in CRM_SYNC_STATUSES:
        raise Invalid(f"Query parameter 'crmSyncStatus' must be one of {', '.join(CRM_SYNC_STATUSES)}")
    async with services.db.session(tenant=workspace_id) as session:
        return await list_leads(session, page=page, limit=limit, status=status, provider=provider, search=search)


async def _lead(session, lead_id: str) -> Lead:
    lead = await session.get(Lead, lead_id)
    if lead is None:
        raise NotFound("Lead not found")
    return lead


async def lead_with_syncs(services: Services, workspace_id: str, lead_id: str) -> tuple[Lead, list[LeadSync]]:
    """The workspace's lead and its CRM syncs; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        lead = await _lead(session, lead_id)
        return lead, await syncs_of(session, lead)


async def retry_sync(services: Services, workspace_id: str, lead_id: str) -> tuple[Lead, int]:
    """Queue the push of the workspace's lead to every CRM destination that does not have it yet:
    the lead and how many pushes were queued; NotFound."""
    async with services.db.transaction(tenant=workspace_id) as session:
        lead = await _lead(session, lead_id)
        return lead, await schedule_push(services, session, lead)
