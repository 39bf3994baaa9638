"""Storing leads: cleaning and deduplicating them, and their JSON shape."""

from __future__ import annotations

import re
from typing import Any

import attrs
from sqlalchemy import func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.storage.sql import one_of
from patchbay.core.timeutil import iso, utcnow
from patchbay.core.webhooks.protocol import LeadData

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

#: form field names (lower case, '-' and ' ' as '_') that carry the well-known lead attributes
FIELD_ALIASES = {
    "email": ("email", "email_address", "e_mail", "work_email", "emailaddress"),
    "phone": ("phone", "phone_number", "mobile", "mobile_phone", "mobile_number", "tel", "telephone", "phonenumber"),
    "first_name": ("first_name", "firstname", "given_name"),
    "last_name": ("last_name", "lastname", "surname", "family_name"),
    "full_name": ("full_name", "fullname", "name"),
}
_ALIAS_OF = {alias: target for target, aliases in FIELD_ALIASES.items() for alias in aliases}


def normalize_email(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    email = value.strip().lower()
    return email if _EMAIL.match(email) and len(email) <= 320 else None


def normalize_phone(value: Any) -> str | None:
    """Digits only, keeping a leading ``+`` (``00`` becomes ``+``); None when too short to dial."""
    if not isinstance(value, str | int):
        return None
    text = str(value).strip()
    plus = text.startswith("+")
    digits = re.sub(r"\D", "", text)
    if not plus and digits.startswith("00"):
        plus, digits = True, digits[2:]
    if not 7 <= len(digits) <= 15:
        return None
    return ("+" if plus else "") + digits


def _clean_text(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [_clean_text(item) for item in value]
    return value


def clean_lead(data: LeadData) -> dict[str, Any]:
    """The lead's columns: email, phone and names picked out of the form fields and normalised, the
    other answers kept as custom fields."""
    known: dict[str, Any] = {}
    custom: dict[str, Any] = {}
    for name, value in data.fields.items():
        key = re.sub(r"[\s-]+", "_", str(name).strip().lower())
        target = _ALIAS_OF.get(key)
        value = _clean_text(value)
        if target and target not in known and value not in (None, "", []):
            known[target] = value
        else:
            custom[str(name)] = value
    first, last, full = (known.get(k) if isinstance(known.get(k), str) else None for k in ("first_name", "last_name", "full_name"))
    if full and not (first or last):
        first, _, last = full.partition(" ")
        last = last or None
    if not full and (first or last):
        full = " ".join(part for part in (first, last) if part)
    email = normalize_email(known.get("email"))
    phone = normalize_phone(known.get("phone"))
    if known.get("email") and not email:
        custom.setdefault("email", known["email"])
    if known.get("phone") and not phone:
        custom.setdefault("phone", known["phone"])
    return {
        "external_id": data.external_id,
        "form_id": data.form_id,
        "email": email,
        "phone": phone,
        "first_name": first,
        "last_name": last,
        "full_name": full,
        "fields": custom,
        "raw": dict(data.raw) or {"fields": dict(data.fields)},
        "captured_at": data.created_at or utcnow(),
    }


async def find_duplicate(session: AsyncSession, workspace_id: str, provider: str, cleaned: dict[str, Any]) -> Lead | None:
    """The workspace's existing lead for this one: same provider lead id, else same email, else
    same phone."""
    checks = [(Lead.provider == provider) & (Lead.external_id == cleaned["external_id"])] if cleaned.get("external_id") else []
    if cleaned.get("email"):
        checks.append(Lead.email == cleaned["email"])
    if cleaned.get("phone"):
        checks.append(Lead.phone == cleaned["phone"])
    for check in checks:
        found = await session.scalar(select(Lead).where(Lead.workspace_id == workspace_id, check).order_by(Lead.created_at).limit(1))
        if found is not None:
            return found
    return None


async def lock_workspace_leads(session: AsyncSession, workspace_id: str) -> None:
    """Serialise lead deduplication within a workspace until the transaction ends. PostgreSQL: an
    advisory transaction lock; SQLite: a transaction that has written holds the database's only
    write lock already."""
    if session.bind.dialect.name == "postgresql":
        await session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"patchbay.leads:{workspace_id}"})


async def save_lead(
    session: AsyncSession, *, workspace_id: str, provider: str, data: LeadData, connection_id: str | None, event_id: str | None, source: str
) -> tuple[Lead, bool]:
    """Store a lead unless the workspace has it already: ``(lead, created)``."""
    cleaned = clean_lead(data)
    existing = await find_duplicate(session, workspace_id, provider, cleaned)
    if existing is not None:
        return existing, False
    lead = Lead(workspace_id=workspace_id, provider=provider, connection_id=connection_id, event_id=event_id, source=source, **cleaned)
    session.add(lead)
    await session.flush()
    return lead, True


@attrs.frozen
class NewLead:
    """A lead to store, as :func:`save_leads` takes it."""

    workspace_id: str
    provider: str
    data: LeadData
    connection_id: str | None
    event_id: str | None
    source: str


def _identity(workspace_id: str, provider: str, external_id: str | None, email: str | None, phone: str | None) -> list[tuple[str, ...]]:
    """The keys a lead is known by, in the order :func:`find_duplicate` tries them."""
    keys: list[tuple[str, ...]] = []
    if external_id:
        keys.append(("external_id", workspace_id, provider, external_id))
    if email:
        keys.append(("email", workspace_id, email))
    if phone:
        keys.append(("phone", workspace_id, phone))
    return keys


async def save_leads(session: AsyncSession, items: list[NewLead]) -> list[tuple[Lead, bool]]:
    """:func:`save_lead` for many leads, in order, a known person's lead merged with the newer one
    (:func:`merge_lead`): one query for the leads already stored, one flush. Each item sees the
    ones before it, as one call each would. Answers ``(lead, created)`` per item; a lead met twice
    shows its last state in both answers. Hold :func:`lock_workspace_leads` of every workspace."""
    if not items:
        return []
    cleaned = [clean_lead(item.data) for item in items]
    conditions = []
    for column, name in ((Lead.external_id, "external_id"), (Lead.email, "email"), (Lead.phone, "phone")):
        values = {c[name] for c in cleaned if c.get(name)}
        if values:
            conditions.append(one_of(column, values))
    known: dict[tuple[str, ...], Lead] = {}

    def remember(lead: Lead) -> None:
        for key in _identity(lead.workspace_id, lead.provider, lead.external_id, lead.email, lead.phone):
            known.setdefault(key, lead)

    if conditions:
        statement = select(Lead).where(one_of(Lead.workspace_id, {item.workspace_id for item in items}), or_(*conditions)).order_by(Lead.created_at)
        for lead in (await session.scalars(statement)).all():
            remember(lead)
    saved = []
    for item, values in zip(items, cleaned, strict=True):
        keys = _identity(item.workspace_id, item.provider, values.get("external_id"), values.get("email"), values.get("phone"))
        lead = next((known[key] for key in keys if key in known), None)
        if lead is None:
            lead = Lead(
                workspace_id=item.workspace_id, provider=item.provider, connection_id=item.connection_id, event_id=item.event_id, source=item.source, **values
            )
            session.add(lead)
            saved.append((lead, True))
        else:
            merge_lead(lead, item.data)
            saved.append((lead, False))
        remember(lead)
    await session.flush()
    return saved


_MERGED = ("form_id", "email", "phone", "first_name", "last_name", "full_name")


def merge_lead(lead: Lead, data: LeadData) -> None:
    """Update a known person's lead with what a newer lead of theirs says: values it carries win,
    custom fields are merged; the lead keeps its identity (id, provider lead id, first event)."""
    cleaned = clean_lead(data)
    for name in _MERGED:
        if cleaned[name] not in (None, ""):
            setattr(lead, name, cleaned[name])
    lead.fields = {**(lead.fields or {}), **cleaned["fields"]}


async def list_leads(
    session: AsyncSession, *, page: int, limit: int, status: str | None = None, provider: str | None = None, search: str | None = None
) -> tuple[list[Lead], int]:
    """The session workspace's leads, newest first: ``(page of leads, total)``; ``search`` finds a
    part of the email, the full name (any case) or the phone."""
    conditions = []
    if status:
        conditions.append(Lead.crm_sync_status == status)
    if provider:
        conditions.append(Lead.provider == provider)
    search = (search or "").strip().lower()
    if search:
        pattern = f"%{search}%"
        conditions.append(or_(Lead.email.like(pattern), func.lower(Lead.full_name).like(pattern), Lead.phone.like(pattern)))
    total = await session.scalar(select(func.count()).select_from(Lead).where(*conditions))
    rows = (await session.scalars(select(Lead).where(*conditions).order_by(Lead.created_at.desc(), Lead.id).offset((page - 1) * limit).limit(limit))).all()
    return list(rows), total or 0


async def syncs_of(session: AsyncSession, lead: Lead) -> list[LeadSync]:
    """The lead's CRM syncs, oldest first."""
    return list((await session.scalars(select(LeadSync).where(LeadSync.lead_id == lead.id).order_by(LeadSync.created_at))).all())


def lead_json(lead: Lead, syncs: list[Any] | None = None) -> dict[str, Any]:
    body = {
        "id": lead.id,
        "accountId": lead.workspace_id,
        "provider": lead.provider,
        "connectionId": lead.connection_id,
        "eventId": lead.event_id,
        "externalId": lead.external_id,
        "formId": lead.form_id,
        "source": lead.source,
        "email": lead.email,
        "phone": lead.phone,
        "firstName": lead.first_name,
        "lastName": lead.last_name,
        "fullName": lead.full_name,
        "customFields": lead.fields,
        "crmSyncStatus": lead.crm_sync_status,
        "capturedAt": iso(lead.captured_at),
        "createdAt": iso(lead.created_at),
    }
    if syncs is not None:
        body["crmSyncs"] = [
            {
                "connectionId": s.connection_id,
                "provider": s.provider,
                "status": s.status,
                "externalId": s.external_id,
                "attempts": s.attempts,
                "error": s.error,
                "lastAttemptAt": iso(s.last_attempt_at),
            }
            for s in syncs
        ]
    return body


def destination_lead(lead: Lead) -> dict[str, Any]:
    """What a CRM destination receives: the cleaned lead."""
    return {
        "id": lead.id,
        "provider": lead.provider,
        "externalId": lead.external_id,
        "formId": lead.form_id,
        "email": lead.email,
        "phone": lead.phone,
        "firstName": lead.first_name,
        "lastName": lead.last_name,
        "fullName": lead.full_name,
        "customFields": dict(lead.fields or {}),
        "capturedAt": iso(lead.captured_at),
    }
