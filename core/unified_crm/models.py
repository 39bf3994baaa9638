"""The unified CRM model: the fields every CRM's contacts, companies and deals are mapped onto.

A mapper (``register_crm_mappers``) returns plain dicts with these keys; the core keeps exactly these
keys (a missing one is null, an unknown one is dropped) so every CRM answers the same shape.

Contact: ``id``, ``firstName``, ``lastName``, ``email``, ``phone``, ``title``, ``companyId``,
``createdAt``, ``updatedAt``.
Company: ``id``, ``name``, ``domain``, ``industry``, ``phone``, ``employees`` (number),
``createdAt``, ``updatedAt``.
Deal: ``id``, ``name``, ``amount`` (number, in the currency's main unit), ``currency`` (ISO 4217),
``stage``, ``closeDate`` (``YYYY-MM-DD``), ``companyId``, ``createdAt``, ``updatedAt``.
Timestamps are ISO 8601 as the CRM gives them (UTC where the CRM says so); ids are strings. Every
other field is text: a number a mapper passes through (an option id) is written as text, a value
of another kind (an object, a list) is null, so every answer keeps the documented shape.
"""

from __future__ import annotations

from typing import Any

RESOURCE_FIELDS: dict[str, tuple[str, ...]] = {
    "contacts": ("id", "firstName", "lastName", "email", "phone", "title", "companyId", "createdAt", "updatedAt"),
    "companies": ("id", "name", "domain", "industry", "phone", "employees", "createdAt", "updatedAt"),
    "deals": ("id", "name", "amount", "currency", "stage", "closeDate", "companyId", "createdAt", "updatedAt"),
}
RESOURCES = tuple(RESOURCE_FIELDS)
_NUMBERS = {"employees", "amount"}


def _number(value: Any) -> int | float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        number = float(str(value).replace(",", ""))
    except ValueError:
        return None
    return int(number) if number.is_integer() else number


def unify(resource: str, item: Any, provider: str) -> dict[str, Any]:
    """One mapper result in the unified shape, with the CRM it came from."""
    if not isinstance(item, dict) or item.get("id") in (None, ""):
        raise ValueError(f"the {provider} mapper returned a {resource} item without an id")
    result: dict[str, Any] = {}
    for field in RESOURCE_FIELDS[resource]:
        value = item.get(field)
        if field in _NUMBERS:
            value = _number(value)
        elif value == "" or isinstance(value, dict | list):
            value = None
        elif value is not None:
            value = str(value)
        result[field] = value
    result["provider"] = provider
    return result
