"""Mailchimp Marketing API 3.0: add or update audience members; a poll trigger for new subscribers."""

from __future__ import annotations

import hashlib
from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, compact, now_iso, schema
from patchbay.providers._shared.polling import high_water_mark


async def add_member(client, inputs: dict[str, Any]) -> Any:
    email = str(inputs["email"]).strip()
    member_hash = hashlib.md5(email.lower().encode()).hexdigest()  # noqa: S324 - Mailchimp's member id
    body = compact(
        {"email_address": email, "status_if_new": inputs.get("status") or "subscribed", "merge_fields": inputs.get("mergeFields"), "tags": inputs.get("tags")}
    )
    return await call(client, "PUT", f"/3.0/lists/{inputs['listId']}/members/{member_hash}", json=body)


async def list_options(client) -> list[dict[str, Any]]:
    body = await call(client, "GET", "/3.0/lists", params={"count": 100, "fields": "lists.id,lists.name"})
    return [{"label": item.get("name"), "value": item.get("id")} for item in (body or {}).get("lists") or []]


async def _subscribers_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    """Members who opted in after the cursor (an ISO timestamp)."""
    body = await call(client, "GET", f"/3.0/lists/{config['listId']}/members", params={"since_timestamp_opt": cursor, "count": 100, "status": "subscribed"})
    return (body or {}).get("members") or []


poll_new_subscribers = high_water_mark(_subscribers_after, start=lambda client, config: now_iso(), mark=lambda member: member.get("timestamp_opt"))


def actions() -> list[Action]:
    return [
        Action(
            name="add_member",
            display_name="Add or update subscriber",
            run=add_member,
            description="Add an email address to an audience.",
            docs_url="https://mailchimp.com/developer/marketing/api/list-members/add-or-update-list-member/",
            inputs=schema(
                ("listId", "email"),
                listId="string",
                email="string",
                status={"type": "string", "enum": ["subscribed", "pending", "unsubscribed", "transactional"]},
                mergeFields="object",
                tags="array",
            ),
            options={"listId": list_options},
        )
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_subscriber",
            display_name="New subscriber",
            kind="poll",
            docs_url="https://mailchimp.com/developer/marketing/api/list-members/list-members-info/",
            poll=poll_new_subscribers,
            item_id=lambda m: m.get("id"),
            config=schema(("listId",), listId="string"),
            description="Someone subscribed to an audience.",
        )
    ]
