"""Trello's declared actions (``providers/trello/actions.toml``) through patchbay's HTTP API against a
fake of Trello's API: the key and token go in the query, card fields in a JSON body, and the
new_card poll asks for the board's createCard actions since the last one seen."""

import json

import pytest


async def _execute(harness, action: str, inputs: dict):
    return await harness.http.post(
        "/api/execute", json={"connectionId": harness.connection_id, "action": f"trello.{action}", "inputs": inputs}, headers=harness.workspace["headers"]
    )


@pytest.mark.asyncio
async def test_create_card_sends_key_token_and_a_json_body(pack_harness):
    harness = await pack_harness("trello")
    harness.fake.routes[("POST", "/cards")] = (200, {"id": "5abbe4b7ddc1b351ef961415", "idList": "5abbe4b7ddc1b351ef961414", "name": "Bug"})
    response = await _execute(harness, "create_card", {"list_id": "5abbe4b7ddc1b351ef961414", "name": "Bug", "member_ids": ["m1", "m2"]})
    assert response.status == 201, await response.text()
    seen = harness.fake.requests[-1]
    assert seen.query == {"key": "acceptance-key", "token": "acceptance-secret"}
    assert json.loads(seen.body) == {"idList": "5abbe4b7ddc1b351ef961414", "name": "Bug", "idMembers": ["m1", "m2"]}


@pytest.mark.asyncio
async def test_comment_and_search_send_their_query(pack_harness):
    harness = await pack_harness("trello")
    harness.fake.routes[("POST", "/cards/c 1/actions/comments")] = (200, {"id": "a1", "type": "commentCard"})
    harness.fake.routes[("GET", "/search")] = (200, {"cards": [{"id": "c1"}]})
    assert (await _execute(harness, "add_comment", {"card_id": "c 1", "text": "Ship it"})).status == 201
    assert harness.fake.requests[-1].query["text"] == "Ship it"
    found = await _execute(harness, "search_cards", {"query": "release", "board_ids": "mine"})
    assert (await found.json())["data"] == [{"id": "c1"}]
    assert {k: v for k, v in harness.fake.requests[-1].query.items() if k not in ("key", "token")} == {
        "query": "release",
        "idBoards": "mine",
        "modelTypes": "cards",
    }


@pytest.mark.asyncio
async def test_new_card_polls_board_actions_since_the_newest_seen(pack_harness):
    harness = await pack_harness("trello")
    actions = [{"id": "a2", "type": "createCard", "date": "2024-01-02T00:00:00.000Z"}, {"id": "a1", "type": "createCard", "date": "2024-01-01T00:00:00.000Z"}]
    harness.fake.routes[("GET", "/boards/b1/actions")] = (200, actions)
    trigger = harness.registry.get("triggers", "trello")["new_card"]
    client = await harness.client()
    items, cursor = await trigger.poll(client, {"board_id": "b1"}, None)
    assert items == [] and cursor == {"after": "2024-01-02T00:00:00.000Z"}
    first = harness.fake.requests[-1].query
    assert first["filter"] == "createCard" and "since" not in first
    harness.fake.routes[("GET", "/boards/b1/actions")] = (200, [{"id": "a3", "type": "createCard", "date": "2024-01-03T00:00:00.000Z"}, *actions])
    items, cursor = await trigger.poll(client, {"board_id": "b1"}, cursor)
    assert [item["id"] for item in items] == ["a3"] and cursor == {"after": "2024-01-03T00:00:00.000Z"}
    assert harness.fake.requests[-1].query["since"] == "2024-01-02T00:00:00.000Z"
