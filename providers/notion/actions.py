"""Notion API: create pages in a database; a poll trigger for new database items."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, now_iso, schema
from patchbay.providers._shared.polling import high_water_mark

HEADERS = {"Notion-Version": "2022-06-28"}


async def create_page(client, inputs: dict[str, Any]) -> Any:
    properties = {inputs.get("titleProperty") or "Name": {"title": [{"text": {"content": str(inputs["title"])}}]}, **(inputs.get("properties") or {})}
    page: dict[str, Any] = {"parent": {"database_id": inputs["databaseId"]}, "properties": properties}
    if inputs.get("content"):
        page["children"] = [
            {"object": "block", "type": "paragraph", "paragraph": {"rich_text": [{"type": "text", "text": {"content": str(inputs["content"])[:2000]}}]}}
        ]
    body = await call(client, "POST", "/v1/pages", json=page, headers=HEADERS)
    return {"id": body.get("id"), "url": body.get("url")}


async def database_options(client) -> list[dict[str, Any]]:
    body = await call(client, "POST", "/v1/search", json={"filter": {"property": "object", "value": "database"}}, headers=HEADERS)
    return [{"label": "".join(t.get("plain_text", "") for t in d.get("title") or []) or d.get("id"), "value": d.get("id")} for d in body.get("results") or []]


async def _items_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    """Pages of a database created after the cursor (an ISO timestamp)."""
    query = {
        "filter": {"timestamp": "created_time", "created_time": {"after": cursor}},
        "sorts": [{"timestamp": "created_time", "direction": "ascending"}],
        "page_size": 100,
    }
    return (await call(client, "POST", f"/v1/databases/{config['databaseId']}/query", json=query, headers=HEADERS) or {}).get("results") or []


poll_new_items = high_water_mark(_items_after, start=lambda client, config: now_iso(), mark=lambda page: page.get("created_time"))


def actions() -> list[Action]:
    return [
        Action(
            name="create_page",
            display_name="Create database page",
            run=create_page,
            description="Add a page to a database.",
            docs_url="https://developers.notion.com/reference/post-page",
            inputs=schema(("databaseId", "title"), databaseId="string", title="string", titleProperty="string", properties="object", content="string"),
            options={"databaseId": database_options},
        )
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_database_item",
            display_name="New database item",
            kind="poll",
            docs_url="https://developers.notion.com/reference/post-database-query",
            poll=poll_new_items,
            config=schema(("databaseId",), databaseId="string"),
            description="A page was added to a database.",
        )
    ]
