"""Stripe API (form-encoded): customers; poll triggers for new charges and customers (create_refund is
declared in actions.toml)."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, compact, now_epoch, schema
from patchbay.providers._shared.polling import high_water_mark


def _form(values: dict[str, Any]) -> dict[str, Any]:
    form = compact({k: v for k, v in values.items() if k != "metadata"})
    for key, value in (values.get("metadata") or {}).items():
        form[f"metadata[{key}]"] = value
    return form


async def create_customer(client, inputs: dict[str, Any]) -> Any:
    return await call(client, "POST", "/v1/customers", data=_form({k: inputs.get(k) for k in ("email", "name", "phone", "description", "metadata")}))


def _poller(resource: str):
    async def created_after(client, config: dict[str, Any], cursor: int) -> list[dict[str, Any]]:
        """Objects created after the cursor (epoch seconds)."""
        body = await call(client, "GET", f"/v1/{resource}", params={"created[gt]": int(cursor), "limit": 100})
        return (body or {}).get("data") or []

    return high_water_mark(created_after, start=lambda client, config: now_epoch(), mark=lambda item: int(item["created"]) if item.get("created") else None)


def actions() -> list[Action]:
    return [
        Action(
            name="create_customer",
            display_name="Create customer",
            run=create_customer,
            description="Create a customer.",
            docs_url="https://stripe.com/docs/api/customers/create",
            inputs=schema((), email="string", name="string", phone="string", description="string", metadata="object"),
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_charge",
            display_name="New charge",
            kind="poll",
            docs_url="https://docs.stripe.com/api/charges/list",
            poll=_poller("charges"),
            description="A charge was created.",
            sample={"id": "ch_1", "amount": 1999, "currency": "usd", "status": "succeeded"},
        ),
        Trigger(
            name="new_customer",
            display_name="New customer",
            kind="poll",
            docs_url="https://docs.stripe.com/api/customers/list",
            poll=_poller("customers"),
            description="A customer was created.",
            sample={"id": "cus_1", "email": "ada@example.com"},
        ),
    ]
