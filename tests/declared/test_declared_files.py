"""Every declared file of the repository: it loads, each action's example passes its input schema
and runs against a fake answering the documented sample, a wrongly typed input is refused, each
poll trigger polls, and the built-in plugin registers it all (webhook handlers included)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import jsonschema
import pytest
from multidict import CIMultiDict

from patchbay.core.actions.inputs import check_inputs
from patchbay.core.declared.loader import declarations
from patchbay.core.declared.objects import actions_of, triggers_of, webhook_handler
from patchbay.core.declared.runner import select
from patchbay.core.errors import Invalid
from patchbay.core.webhooks.protocol import InboundRequest
from patchbay.testing.clients import FakeClient

DECLARED = declarations()
ACTIONS = [(declaration, action) for declaration in DECLARED for action in declaration.actions]
POLLS = [(declaration, trigger) for declaration in DECLARED for trigger in declaration.triggers if trigger.kind == "poll"]
WEBHOOKS = [declaration for declaration in DECLARED if declaration.webhooks is not None]


def _id(pair) -> str:
    return f"{pair[0].provider}.{pair[1].name}"


def test_the_repository_declares_providers():
    assert {"github", "gitlab"} <= {declaration.provider for declaration in DECLARED}


@pytest.mark.parametrize("pair", ACTIONS, ids=map(_id, ACTIONS))
async def test_each_example_runs_against_the_documented_sample(pair):
    declaration, action = pair
    run = next(a for a in actions_of(declaration) if a.name == action.name).run
    client = FakeClient(respond=lambda call: action.sample)
    result = await run(client, dict(action.example))
    call = client.calls[0]
    assert call.method == action.request.method
    assert "{" not in call.path and "}" not in call.path, call.path
    answer = action.sample["data"] if action.request.graphql is not None else action.sample  # selectors read a GraphQL answer's data
    if action.pagination is not None:
        # the fake answers the same page each time: as many copies as pages were asked for
        assert result == select(action.output.select, answer) * len(client.calls)
        assert 1 <= len(client.calls) <= action.pagination.max_pages
    else:
        assert result == select(action.output.select, answer)
    if action.output.schema is not None:
        jsonschema.validate(result, action.output.schema)


@pytest.mark.parametrize("pair", ACTIONS, ids=map(_id, ACTIONS))
def test_a_wrongly_typed_input_is_refused(pair):
    """By the check ``run_action`` makes before any declared action runs."""
    _, action = pair
    registered = next(a for a in actions_of(pair[0]) if a.name == action.name)
    name = action.input["required"][0] if action.input.get("required") else next(iter(action.input.get("properties", {})), None)
    if name is None:
        pytest.skip("the action takes no input")
    wrong = {"string": 12345, "integer": "twelve", "number": "twelve", "boolean": "yes", "array": "x", "object": "x"}.get(
        action.input["properties"][name].get("type"), {"not": "valid"}
    )
    with pytest.raises(Invalid, match=f"inputs.{name}"):
        check_inputs(registered.inputs, {**action.example, name: wrong})


@pytest.mark.parametrize("pair", POLLS, ids=map(_id, POLLS))
async def test_each_poll_trigger_polls_the_documented_answer(pair):
    declaration, trigger = pair
    poll = next(t for t in triggers_of(declaration) if t.name == trigger.name)
    client = FakeClient(respond=lambda call: trigger.response)
    items, cursor = await poll.poll(client, dict(trigger.example), None)
    assert items == [] and cursor["after"] is not None
    found = select(trigger.items, trigger.response)
    assert found, "the documented answer holds an item"
    assert poll.item_id(found[0]) not in ("", "None")
    items, _ = await poll.poll(client, dict(trigger.example), {"after": None})
    assert items == found


#: where the handler tests below say a delivery was posted (what a signed ``{url}`` stands for)
POSTED_TO = "https://patchbay.test/webhook/x"


def _signed_headers(declaration, secret: str, body: bytes) -> dict[str, str]:
    """The headers the provider sends with ``body``, written from the format's description (an
    implementation of its own, not the handler's)."""
    verify = declaration.webhooks.verify
    if verify.scheme == "token":
        return {verify.header: secret}
    timestamp = str(int(time.time()))
    signed = verify.signed.replace("{timestamp}", timestamp).replace("{url}", POSTED_TO).encode().replace(b"{body}", body)
    digest = hmac.new(secret.encode(), signed, getattr(hashlib, verify.algorithm)).digest()
    signature = verify.prefix + (digest.hex() if verify.encoding == "hex" else base64.b64encode(digest).decode())
    if verify.signature_key:
        signature = (f"{verify.timestamp_key}={timestamp}," if verify.timestamp_key else "") + f"{verify.signature_key}={signature}"
    return {verify.header: signature, **({verify.timestamp_header: timestamp} if verify.timestamp_header else {})}


@pytest.mark.parametrize("declaration", WEBHOOKS, ids=[d.provider for d in WEBHOOKS])
def test_each_webhook_handler_verifies_and_reads_its_events(declaration):
    handler = webhook_handler(declaration)
    body = b'{"probe": true}'

    def request(headers: dict[str, str]) -> InboundRequest:
        return InboundRequest(method="POST", url=POSTED_TO, headers=CIMultiDict(headers), query={}, body=body)

    assert handler.verify(request(_signed_headers(declaration, "s3cret", body)), "s3cret")
    assert not handler.verify(request(_signed_headers(declaration, "other", body)), "s3cret")
    assert not handler.verify(request({}), "s3cret")
    for trigger in (t for t in declaration.triggers if t.kind == "webhook"):
        assert trigger.sample, f"{trigger.name}: a webhook trigger declares a sample item"
        assert trigger.events


async def test_the_plugin_registers_every_declaration(pack_harness):
    harness = await pack_harness("github")
    registry = harness.registry
    for declaration in DECLARED:
        for provider in declaration.providers:
            if registry.provider(provider) is None:
                continue
            # a file may declare actions only (or triggers only): the registry answers None for a kind with nothing
            # registered; a pack with code registers its own objects beside the file's (airtable's poll trigger)
            for kind, declared in (("actions", declaration.actions), ("triggers", declaration.triggers)):
                registered = set(registry.get(kind, provider) or ())
                names = {item.name for item in declared}
                assert names <= registered, (provider, kind)
                owners = {name: registry._owners[(kind, f"{provider}/{name}")] for name in registered}
                assert {name for name, owner in owners.items() if owner == "declared"} == names, (provider, kind)
                assert (kind in registry.provider(provider).capabilities) == bool(registered)
            if declaration.webhooks is not None:
                assert registry._owners[("webhooks", provider)] == "declared"


async def test_a_declared_action_runs_through_api_execute(pack_harness):
    harness = await pack_harness("github")
    harness.fake.routes[("POST", "/repos/octo cat/hello/issues")] = (201, {"id": 1, "number": 7, "title": "Bug"})
    response = await harness.http.post(
        "/api/execute",
        json={"connectionId": harness.connection_id, "action": "github.create_issue", "inputs": {"owner": "octo cat", "repo": "hello", "title": "Bug"}},
        headers=harness.workspace["headers"],
    )
    assert response.status == 201, await response.text()
    assert await response.json() == {"success": True, "data": {"id": 1, "number": 7, "title": "Bug"}}
    seen = harness.fake.seen[-1]
    assert seen.raw_path == "/repos/octo%20cat/hello/issues" and seen.headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert seen.headers["Authorization"].endswith("acceptance-token")
