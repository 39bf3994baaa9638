"""Declared requests as a real connection client sends them to a real local server: the exact call,
the selected output, pagination (cursor, Link, page), provider refusals, input checks and polling."""

from __future__ import annotations

import json
import textwrap

import pytest

from patchbay.core.connections.client import ProviderResponse
from patchbay.core.declared.loader import parse
from patchbay.core.declared.objects import actions_of, triggers_of
from patchbay.core.declared.runner import ProviderConflict, ProviderFailed, ProviderNotFound, ProviderRateLimited, next_link, retry_after
from patchbay.core.errors import Invalid

DECLARATION = textwrap.dedent(
    """
    provider = "github"
    headers = { Accept = "application/vnd.acme+json" }

    [[actions]]
    name = "create_ticket"
    title = "Create ticket"
    docs = "https://docs.acme.test/tickets#create"
    input = { type = "object", required = ["project", "summary"], properties = { project = { type = "string" }, summary = { type = "string" }, priority = { type = "integer" }, notify = { type = "boolean" }, labels = { type = "array" }, tenant = { type = "string" } } }
    example = { project = "group/web app", summary = "Broken" }
    request = { method = "POST", path = "/projects/{project}/tickets", query = { notify = "notify" }, fixed_query = { expand = "fields" }, headers = { "X-Trace" = "1" }, input_headers = { "X-Tenant" = "tenant" }, body = { "fields.summary" = "summary", "fields.priority.id" = "priority", labels = "labels" }, fixed_body = { fields = { type = "task" } } }
    output = { select = "ticket" }
    sample = { ticket = { id = "T-1" } }

    [[actions]]
    name = "send_message"
    title = "Send message"
    docs = "https://docs.acme.test/messages#send"
    input = { type = "object", required = ["to", "text"], properties = { to = { type = "string" }, text = { type = "string" } } }
    example = { to = "+15550100", text = "hi" }
    request = { method = "POST", path = "/messages", body = { To = "to", Body = "text" }, fixed_body = { Channel = "sms" }, body_format = "form" }
    sample = { sid = "SM1" }

    [[actions]]
    name = "list_cursor"
    title = "List by cursor"
    docs = "https://docs.acme.test/things#list"
    input = { type = "object", properties = { status = { type = "string" } } }
    example = {}
    request = { method = "GET", path = "/things", query = { status = "status" } }
    output = { select = "data" }
    pagination = { style = "cursor", next_cursor = "meta.next", cursor_param = "after", size_param = "limit", page_size = 2 }
    sample = { data = [] }

    [[actions]]
    name = "list_linked"
    title = "List by Link"
    docs = "https://docs.acme.test/things#list"
    input = { type = "object" }
    example = {}
    request = { method = "GET", path = "/linked" }
    pagination = { style = "link", size_param = "per_page", page_size = 2 }
    sample = []

    [[actions]]
    name = "list_pages"
    title = "List by page"
    docs = "https://docs.acme.test/things#list"
    input = { type = "object" }
    example = {}
    request = { method = "GET", path = "/paged" }
    output = { select = "results" }
    pagination = { style = "page", page_param = "page", size_param = "per_page", page_size = 2 }
    sample = { results = [] }

    [[triggers]]
    name = "new_thing"
    title = "New thing"
    docs = "https://docs.acme.test/things#list"
    kind = "poll"
    config = { type = "object", required = ["project"], properties = { project = { type = "string" } } }
    example = { project = "p1" }
    request = { method = "GET", path = "/projects/{project}/things", fixed_query = { sort = "created" } }
    items = "things"
    cursor = "created_at"
    cursor_param = "since"
    sample = { id = "a" }
    """
)


@pytest.fixture
def declared():
    declaration = parse(DECLARATION, "test")
    return {a.name: a for a in actions_of(declaration)}, {t.name: t for t in triggers_of(declaration)}


@pytest.fixture
async def harness(pack_harness):
    return await pack_harness("github")


async def test_the_exact_request_is_sent_and_the_output_selected(harness, declared):
    api = harness.fake
    api.routes[("POST", "/projects/group/web app/tickets")] = (201, {"ticket": {"id": "T-9"}, "other": 1})
    client = await harness.client()
    result = await declared[0]["create_ticket"].run(
        client, {"project": "group/web app", "summary": "Broken", "priority": 2, "notify": False, "labels": ["a"], "tenant": "t-42"}
    )
    assert result == {"id": "T-9"}
    seen = api.seen[-1]
    assert (seen.method, seen.raw_path) == ("POST", "/projects/group%2Fweb%20app/tickets")
    assert seen.query == {"expand": "fields", "notify": "false"}
    assert json.loads(seen.body) == {"fields": {"type": "task", "summary": "Broken", "priority": {"id": 2}}, "labels": ["a"]}
    assert seen.headers["Accept"] == "application/vnd.acme+json" and seen.headers["X-Trace"] == "1" and seen.headers["X-Tenant"] == "t-42"
    assert seen.headers["Content-Type"] == "application/json"


async def test_unset_inputs_stay_out_of_query_and_body(harness, declared):
    harness.fake.routes[("POST", "/projects/p/tickets")] = (201, {"ticket": {}})
    await declared[0]["create_ticket"].run(await harness.client(), {"project": "p", "summary": "s"})
    seen = harness.fake.seen[-1]
    assert seen.query == {"expand": "fields"} and "X-Tenant" not in seen.headers
    assert json.loads(seen.body) == {"fields": {"type": "task", "summary": "s"}}


async def test_a_form_body(harness, declared):
    harness.fake.routes[("POST", "/messages")] = (201, {"sid": "SM1"})
    assert await declared[0]["send_message"].run(await harness.client(), {"to": "+15550100", "text": "hi there"}) == {"sid": "SM1"}
    seen = harness.fake.seen[-1]
    assert seen.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert seen.body == b"Channel=sms&To=%2B15550100&Body=hi+there"


async def test_cursor_pagination_follows_the_next_cursor_until_it_ends(harness, declared):
    pages = {None: ([1, 2], "c2"), "c2": ([3, 4], "c3"), "c3": ([5], None)}

    def page(seen):
        items, following = pages[seen.query.get("after")]
        return 200, {"data": items, "meta": {"next": following}}

    harness.fake.routes[("GET", "/things")] = page
    assert await declared[0]["list_cursor"].run(await harness.client(), {"status": "open"}) == [1, 2, 3, 4, 5]
    assert [seen.query for seen in harness.fake.seen] == [
        {"status": "open", "limit": "2"},
        {"status": "open", "limit": "2", "after": "c2"},
        {"status": "open", "limit": "2", "after": "c3"},
    ]


async def test_link_pagination_follows_rel_next(harness, declared):
    base = harness.fake.url

    def page(seen):
        number = int(seen.query.get("page", "1"))
        links = (
            f'<{base}/linked?page={number + 1}&per_page=2>; rel="next", <{base}/linked?page=2&per_page=2>; rel="last"'
            if number < 2
            else f'<{base}/linked?page=1&per_page=2>; rel="first"'
        )
        return 200, [f"item{number}a", f"item{number}b"], {"Link": links}

    harness.fake.routes[("GET", "/linked")] = page
    assert await declared[0]["list_linked"].run(await harness.client(), {}) == ["item1a", "item1b", "item2a", "item2b"]
    assert [seen.query for seen in harness.fake.seen] == [{"per_page": "2"}, {"page": "2", "per_page": "2"}]


async def test_page_pagination_stops_on_a_short_page(harness, declared):
    harness.fake.routes[("GET", "/paged")] = lambda seen: (200, {"results": {"1": ["a", "b"], "2": ["c"]}[seen.query["page"]]})
    assert await declared[0]["list_pages"].run(await harness.client(), {}) == ["a", "b", "c"]
    assert len(harness.fake.seen) == 2


async def test_a_missing_object_is_not_found(harness, declared):
    client = await harness.client()
    with pytest.raises(ProviderNotFound) as caught:
        await declared[0]["create_ticket"].run(client, {"project": "gone", "summary": "s"})
    assert caught.value.status == 404 and caught.value.body == {"message": "Not Found"}


async def test_a_poll_trigger_keeps_a_high_water_mark(harness, declared):
    things = [{"id": "a", "created_at": "2024-01-01T00:00:00Z"}]
    harness.fake.routes[("GET", "/projects/p1/things")] = lambda seen: (200, {"things": things})
    trigger = declared[1]["new_thing"]
    client = await harness.client()
    items, cursor = await trigger.poll(client, {"project": "p1"}, None)
    assert (items, cursor) == ([], {"after": "2024-01-01T00:00:00Z"})
    things.extend([{"id": "c", "created_at": "2024-01-03T00:00:00Z"}, {"id": "b", "created_at": "2024-01-02T00:00:00Z"}])
    items, cursor = await trigger.poll(client, {"project": "p1"}, cursor)
    assert [item["id"] for item in items] == ["b", "c"] and cursor == {"after": "2024-01-03T00:00:00Z"}
    assert harness.fake.seen[-1].query == {"sort": "created", "since": "2024-01-01T00:00:00Z"}
    assert trigger.item_id(items[0]) == "b"
    with pytest.raises(Invalid, match="config.project is required"):
        await trigger.poll(client, {}, cursor)


class AnsweringClient:
    """A connection client answering one status, body and headers (for statuses the real client's
    back-off would act on itself)."""

    def __init__(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        self.answer = ProviderResponse(status, headers or {}, json.dumps(body).encode())

    async def request(self, method, path, **_):
        return self.answer


@pytest.mark.parametrize(
    ("status", "kind"), [(404, ProviderNotFound), (409, ProviderConflict), (429, ProviderRateLimited), (500, ProviderFailed), (422, ProviderFailed)]
)
async def test_statuses_become_domain_errors(declared, status, kind):
    with pytest.raises(kind) as caught:
        await declared[0]["send_message"].run(AnsweringClient(status, {"error": "no"}, {"Retry-After": "7"}), {"to": "x", "text": "y"})
    assert caught.value.status == status and caught.value.body == {"error": "no"}
    if kind is ProviderRateLimited:
        assert caught.value.retry_after == 7.0 and caught.value.headers == {"Retry-After": "7"}


def test_retry_after_reads_seconds_and_dates():
    from datetime import UTC, datetime

    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after("120", now=now) == 120.0
    assert retry_after("Mon, 01 Jan 2024 12:00:30 GMT", now=now) == 30.0
    assert retry_after(None) == 60.0


def test_next_link_reads_rel_next_among_several():
    header = '<https://api.test/x?page=3>; rel="prev", <https://api.test/x?page=5>; rel="next last"'
    assert next_link(header) == "https://api.test/x?page=5"
    assert next_link('<https://api.test/x?page=1>; rel="first"') is None
