"""Contract section 4: every list that answers the page envelope ``{data, page, limit, total}``
takes ``page`` and ``limit`` (limit at most 100, page at most ``MAX_PAGE``) and refuses bad values
with 400 naming them."""

from __future__ import annotations

from patchbay.core.http.bodies import MAX_PAGE
from patchbay.core.http.openapi import route_paths


async def _page_lists(client, headers) -> list[str]:
    """The GET routes without path parameters that answer the page envelope."""
    found = []
    for method, path, _handler in route_paths(client.server.app):
        if method != "GET" or "{" in path or not path.startswith(("/connect/v1/", "/accounts")):
            continue
        response = await client.get(path, headers=headers)
        if response.status != 200 or response.content_type != "application/json":
            continue
        body = await response.json()
        if isinstance(body, dict) and {"data", "page", "limit", "total"} <= set(body):
            found.append(path)
    return found


async def test_every_page_list_takes_page_and_limit(client, workspace):
    headers = workspace["headers"]
    lists = await _page_lists(client, headers)
    assert len(lists) >= 10, lists  # the probe found the page lists
    ignored, unchecked = [], []
    for path in lists:
        body = await (await client.get(f"{path}?page=3&limit=7", headers=headers)).json()
        if (body.get("page"), body.get("limit")) != (3, 7) or len(body["data"]) > 7:
            ignored.append(path)
        response = await client.get(f"{path}?limit=101", headers=headers)
        message = (await response.json()).get("message", "")
        if response.status != 400 or "limit" not in message:
            unchecked.append(path)
        # a page whose offset passes a 64-bit integer is refused, not a database error (500)
        response = await client.get(f"{path}?page=411646058401451392&limit=81", headers=headers)
        if response.status != 400 or "page" not in (await response.json()).get("message", ""):
            unchecked.append(f"{path}?page=411646058401451392")
        last = await client.get(f"{path}?page={MAX_PAGE}&limit=100", headers=headers)
        if last.status != 200 or (await last.json())["data"] != []:
            unchecked.append(f"{path}?page={MAX_PAGE}")
    assert ignored == [] and unchecked == []
