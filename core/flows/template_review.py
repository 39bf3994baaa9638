"""Operator review of templates a workspace asked to make public (issue 11, point 12).

Publishing with ``visibility: public`` only puts a template in ``pending_review``; other workspaces
see and clone it once an operator approves it (``patchbay templates approve ID``)."""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.flows.models import FlowTemplate


class NotPendingReview(LookupError):
    pass


async def pending_templates(session: AsyncSession) -> list[FlowTemplate]:
    return list(await session.scalars(select(FlowTemplate).where(FlowTemplate.visibility == "pending_review").order_by(FlowTemplate.created_at)))


async def decide(session: AsyncSession, template_ref: str, *, approve: bool) -> FlowTemplate:
    """Make the template pending review (by id or slug) public, or send it back to private."""
    template = await session.scalar(select(FlowTemplate).where(or_(FlowTemplate.id == template_ref, FlowTemplate.slug == template_ref)))
    if template is None or template.visibility != "pending_review":
        raise NotPendingReview(f"no template pending review with id or slug {template_ref}")
    template.visibility = "public" if approve else "private"
    await session.flush()
    return template
