"""The bodies the unified CRM routes answer (``core.http.responses``), the unified model of
``core.unified_crm.models`` with the CRM each item came from: the models that serialize them are
the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from patchbay.core.http.responses import cursor_page_of, response_model


@response_model
class CrmProvider:
    """A CRM provider with unified support and the resources it offers."""

    name: str
    displayName: str
    category: str
    resources: list[str]


@response_model
class UnifiedContact:
    id: str
    firstName: str | None
    lastName: str | None
    email: str | None
    phone: str | None
    title: str | None
    companyId: str | None
    createdAt: str | None
    updatedAt: str | None
    provider: str


@response_model
class UnifiedCompany:
    id: str
    name: str | None
    domain: str | None
    industry: str | None
    phone: str | None
    employees: int | float | None
    createdAt: str | None
    updatedAt: str | None
    provider: str


@response_model
class UnifiedDeal:
    """``amount`` in the currency's main unit; ``closeDate`` is ``YYYY-MM-DD``."""

    id: str
    name: str | None
    amount: int | float | None
    currency: str | None
    stage: str | None
    closeDate: str | None
    companyId: str | None
    createdAt: str | None
    updatedAt: str | None
    provider: str


#: the model of an item of each resource (``core.unified_crm.models.RESOURCES``)
ITEM_MODELS: dict[str, type] = {"contacts": UnifiedContact, "companies": UnifiedCompany, "deals": UnifiedDeal}
#: the cursor page of each resource
PAGE_MODELS: dict[str, type] = {resource: cursor_page_of(model) for resource, model in ITEM_MODELS.items()}
