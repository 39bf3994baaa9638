"""What declared webhooks and listings could not say before: an event type read from a header
(GitHub's X-GitHub-Event), stored with the delivery and read by both processing paths; the
handshakes (Dropbox's GET challenge, Asana's X-Hook-Secret, Zoom's endpoint.url_validation, which
is answered only when signed); and a next page named by a URL in the body (Graph's
@odata.nextLink, Twilio's next_page_uri). Each runs through a real app and a real local server."""

from __future__ import annotations

import hashlib
import hmac
import json
import textwrap
import time

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.declared.loader import DeclarationError, parse
from patchbay.core.declared.objects import actions_of
from patchbay.core.webhooks.batch import process_batch
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.core.webhooks.processing import process_event

SECRET = "whsec-gaps"


def github_signed(body: bytes, event: str) -> dict[str, str]:
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Event": event, "Content-Type": "application/json"}


async def stored(harness, event_id: str) -> WebhookEvent:
    async with harness.app[SERVICES].db.session() as session:
        return await session.get(WebhookEvent, event_id)


# -- the event type in a header ----------------------------------------------------------------


@pytest.mark.parametrize("path", ["batch", "one_by_one"])
async def test_a_header_names_the_event_type_which_is_stored_and_read(pack_harness, path):
    harness = await pack_harness("github", overrides={"webhook_secret": SECRET})
    body = json.dumps({"action": "opened", "issue": {"id": 1, "number": 1347, "title": "Found a bug"}, "repository": {"id": 1296269}}).encode()
    answer = await harness.http.post(f"/webhook/github?connectionId={harness.connection_id}", data=body, headers=github_signed(body, "issues"))
    assert answer.status == 200, await answer.text()
    event_id = (await answer.json())["id"]
    assert (await stored(harness, event_id)).event_type == "issues", "typed at receipt, before processing"
    services = harness.app[SERVICES]
    if path == "batch":
        assert await process_batch(services, [event_id]) == []
    else:
        await process_event(services, event_id)
    row = await stored(harness, event_id)
    assert (row.status, row.event_type, row.payload) == ("PROCESSED", "issues", {"id": 1, "number": 1347, "title": "Found a bug"})


async def test_the_header_is_only_read_from_a_verified_delivery(pack_harness):
    harness = await pack_harness("github", overrides={"webhook_secret": SECRET})
    body = b'{"action": "opened", "issue": {"id": 1}}'
    forged = {**github_signed(body, "issues"), "X-Hub-Signature-256": "sha256=" + "0" * 64}
    answer = await harness.http.post("/webhook/github", data=body, headers=forged)
    assert answer.status == 401
    async with harness.app[SERVICES].db.session() as session:
        assert await session.get(WebhookEvent, "x") is None and not (await session.execute(WebhookEvent.__table__.select())).all()


# -- handshakes --------------------------------------------------------------------------------


async def test_dropbox_challenge_is_echoed_as_plain_text_that_is_never_sniffed(pack_harness):
    harness = await pack_harness("dropbox", overrides={"webhook_secret": SECRET})
    answer = await harness.http.get("/webhook/dropbox", params={"challenge": "<script>alert(1)</script>"})
    assert answer.status == 200 and await answer.text() == "<script>alert(1)</script>"
    assert answer.headers["Content-Type"].startswith("text/plain") and answer.headers["X-Content-Type-Options"] == "nosniff"
    assert (await harness.http.get("/webhook/dropbox")).status == 403, "no challenge, no echo"


async def test_asana_handshake_echoes_the_hook_secret_and_stores_nothing(pack_harness):
    harness = await pack_harness("asana", overrides={"webhook_secret": SECRET})
    answer = await harness.http.post("/webhook/asana", headers={"X-Hook-Secret": "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81"})
    assert answer.status == 200 and answer.headers["X-Hook-Secret"] == "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81"
    assert await answer.read() == b""
    async with harness.app[SERVICES].db.session() as session:
        assert not (await session.execute(WebhookEvent.__table__.select())).all()
    unsigned = await harness.http.post("/webhook/asana", data=b'{"events": []}')
    assert unsigned.status == 401, "without the handshake header a delivery is verified as usual"


def zoom_signed(body: bytes, secret: str = SECRET) -> dict[str, str]:
    stamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"x-zm-request-timestamp": stamp, "x-zm-signature": f"v0={digest}", "Content-Type": "application/json"}


async def test_zoom_url_validation_is_answered_with_the_token_signed(pack_harness):
    harness = await pack_harness("zoom", overrides={"webhook_secret": SECRET})
    body = json.dumps({"payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}, "event_ts": 1654503849680, "event": "endpoint.url_validation"}).encode()
    answer = await harness.http.post("/webhook/zoom", data=body, headers=zoom_signed(body))
    assert answer.status == 200
    expected = hmac.new(SECRET.encode(), b"qgg8vlvZRS6UYooatFL8Aw", hashlib.sha256).hexdigest()
    assert await answer.json() == {"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected}
    async with harness.app[SERVICES].db.session() as session:
        assert not (await session.execute(WebhookEvent.__table__.select())).all()


@pytest.mark.parametrize("headers", [{}, "wrong secret"], ids=["unsigned", "wrongly signed"])
async def test_zoom_url_validation_is_no_signing_oracle(pack_harness, headers):
    """The attack: a forged validation whose plainToken is the string a delivery's signature covers
    ("v0:<timestamp>:<body>") would get back encryptedToken, i.e. that delivery's signature."""
    harness = await pack_harness("zoom", overrides={"webhook_secret": SECRET})
    stamp = str(int(time.time()))
    forged_event = b'{"event": "meeting.created", "payload": {"object": {"id": 1}}}'
    body = json.dumps({"event": "endpoint.url_validation", "payload": {"plainToken": f"v0:{stamp}:{forged_event.decode()}"}}).encode()
    sent = zoom_signed(body, secret="not-the-secret") if headers == "wrong secret" else headers
    answer = await harness.http.post("/webhook/zoom", data=body, headers=sent)
    assert answer.status == 401, await answer.text()
    assert "encryptedToken" not in await answer.text()


# -- the next page named by a URL in the body --------------------------------------------------

LISTING = textwrap.dedent(
    """
    provider = "github"

    [[actions]]
    name = "list_graph"
    title = "List (Graph style)"
    docs = "https://learn.microsoft.com/en-us/graph/paging"
    input = { type = "object", properties = { top = { type = "integer" } } }
    example = { top = 2 }
    request = { method = "GET", path = "/v1.0/me/messages", query = { "$top" = "top" } }
    output = { select = "value" }
    pagination = { style = "next_url", next_url = '"@odata.nextLink"' }
    sample = { value = [] }

    [[actions]]
    name = "list_twilio"
    title = "List (Twilio style)"
    docs = "https://www.twilio.com/docs/usage/twilios-response#response-formats-list-paging-information"
    input = { type = "object" }
    example = {}
    request = { method = "GET", path = "/2010-04-01/Accounts/AC1/Messages.json", fixed_query = { PageSize = 2 } }
    output = { select = "messages" }
    pagination = { style = "next_url", next_url = "next_page_uri" }
    sample = { messages = [] }
    """
)


async def test_an_absolute_next_link_is_followed_with_its_own_query(pack_harness):
    harness = await pack_harness("github")
    base = harness.fake.url

    def page(seen):
        if "$skiptoken" not in seen.query:
            return 200, {"value": [1, 2], "@odata.nextLink": f"{base}/v1.0/me/messages?$top=2&$skiptoken=X2"}
        return 200, {"value": [3]}

    harness.fake.routes[("GET", "/v1.0/me/messages")] = page
    run = {a.name: a for a in actions_of(parse(LISTING, "test"))}["list_graph"].run
    assert await run(await harness.client(), {"top": 2}) == [1, 2, 3]
    assert [seen.query for seen in harness.fake.seen] == [{"$top": "2"}, {"$top": "2", "$skiptoken": "X2"}]


async def test_a_next_page_path_is_followed_until_it_is_null(pack_harness):
    harness = await pack_harness("github")
    path = "/2010-04-01/Accounts/AC1/Messages.json"

    def page(seen):
        number = int(seen.query.get("Page", "0"))
        following = f"{path}?PageSize=2&Page={number + 1}&PageToken=PA{number + 1}" if number < 2 else None
        return 200, {"messages": [f"m{number}"], "next_page_uri": following}

    harness.fake.routes[("GET", path)] = page
    run = {a.name: a for a in actions_of(parse(LISTING, "test"))}["list_twilio"].run
    assert await run(await harness.client(), {}) == ["m0", "m1", "m2"]
    assert len(harness.fake.seen) == 3 and harness.fake.seen[2].query == {"PageSize": "2", "Page": "2", "PageToken": "PA2"}


async def test_a_next_link_off_the_api_host_is_refused(pack_harness):
    harness = await pack_harness("github")
    harness.fake.routes[("GET", "/v1.0/me/messages")] = (200, {"value": [1], "@odata.nextLink": "https://attacker.example/steal"})
    run = {a.name: a for a in actions_of(parse(LISTING, "test"))}["list_graph"].run
    with pytest.raises(Exception, match="must stay on the provider's API host"):
        await run(await harness.client(), {"top": 2})
    assert len(harness.fake.seen) == 1


# -- the format refuses what these keys cannot mean --------------------------------------------

HOOKS = """
provider = "acme"

[webhooks]
docs = "https://docs.acme.test/webhooks"
verify = { scheme = "hmac", header = "X-Sig" }
event_type = "event"
"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('event_type = "event"', 'event_type = "event"\nevent_type_header = "X-Event"'), "webhooks.event_type: each event's type is read from the body"),
        (('event_type = "event"', ""), "webhooks.event_type: each event's type is read from the body"),
        (
            ('event_type = "event"', 'event_type = "event"\nhandshake = { style = "sign_token", name = "plainToken" }'),
            "webhooks.handshake.event: style 'sign_token' needs it",
        ),
        (
            (
                'verify = { scheme = "hmac", header = "X-Sig" }',
                'verify = { scheme = "token", header = "X-Sig" }\nhandshake = { style = "sign_token", name = "t", event = "v", token = "p.t", signature_key = "s" }',
            ),
            "webhooks.handshake.style: 'sign_token' answers only a verified request",
        ),
        (
            ('event_type = "event"', 'event_type = "event"\nhandshake = { style = "echo_query", name = "challenge", token = "x" }'),
            "webhooks.handshake.token: only style 'sign_token' has it",
        ),
        (('event_type = "event"', 'event_type = "event"\nhandshake = { style = "echo_body", name = "x" }'), "webhooks.handshake.style"),
    ],
)
def test_bad_webhook_keys_are_refused(change, expected):
    with pytest.raises(DeclarationError, match=None) as caught:
        parse(HOOKS.replace(*change), "providers/acme/actions.toml")
    assert expected in str(caught.value)


def test_next_url_paging_needs_its_selector_and_a_get():
    action = LISTING.split("[[actions]]")[1]
    text = 'provider = "acme"\n[[actions]]' + action.replace(""", next_url = '"@odata.nextLink"' }""", " }")
    with pytest.raises(DeclarationError, match="pagination.next_url: style 'next_url' needs it"):
        parse(text, "test")
    with pytest.raises(DeclarationError, match="next_url paging follows GET URLs"):
        parse('provider = "acme"\n[[actions]]' + action.replace('method = "GET"', 'method = "POST"'), "test")
