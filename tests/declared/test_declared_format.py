"""The format refuses what it does not know and values it cannot use, naming the file and the key."""

from __future__ import annotations

import textwrap

import pytest

from patchbay.core.declared.loader import DeclarationError, declarations, parse

ACTION = """
provider = "acme"

[[actions]]
name = "get_thing"
title = "Get thing"
docs = "https://docs.acme.test/things#get"
input = { type = "object", required = ["id"], properties = { id = { type = "string" } } }
example = { id = "t1" }
request = { method = "GET", path = "/things/{id}" }
sample = { id = "t1" }
"""


def refused(text: str) -> str:
    with pytest.raises(DeclarationError) as caught:
        parse(textwrap.dedent(text), "providers/acme/actions.toml")
    message = str(caught.value)
    assert message.startswith("providers/acme/actions.toml: ")
    return message


def test_a_valid_file_parses():
    declaration = parse(ACTION, "providers/acme/actions.toml")
    assert declaration.provider == "acme"
    assert declaration.actions[0].request.path == "/things/{id}"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (ACTION + 'colour = "red"\n', "extra fields found (colour) @ actions[0]"),
        (ACTION.replace('provider = "acme"', 'provider = "acme"\nflavour = 1'), "extra fields found (flavour) @ the top level"),
        (ACTION.replace('path = "/things/{id}"', 'path = "/things/{id}", verb = "GET"'), "extra fields found (verb) @ actions[0].request"),
    ],
)
def test_unknown_keys_are_refused_naming_the_key(text, key):
    assert key in refused(text)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('title = "Get thing"', "title = 3"), "expected str @ actions[0].title"),
        (('method = "GET"', 'method = "FETCH"'), "actions[0].request.method"),
        (('docs = "https://docs.acme.test/things#get"', 'docs = "docs.acme.test"'), "actions[0] (get_thing).docs: expected the https:// URL"),
        (('example = { id = "t1" }', "example = { id = 5 }"), "actions[0] (get_thing).example: does not satisfy input at $.id: 5 is not of type 'string'"),
        (('path = "/things/{id}"', 'path = "/things/{thing}"'), "actions[0] (get_thing).request.path: placeholder {thing} is not a required input"),
        (('path = "/things/{id}"', 'path = "/things/{id}", query = { q = "query" }'), "actions[0] (get_thing).request.query.q: 'query' is not an input"),
        (('sample = { id = "t1" }', 'sample = { id = "t1" }\noutput = { select = "items[" }'), "actions[0] (get_thing).output.select: not a JMESPath expression"),
        (('sample = { id = "t1" }', 'sample = { id = "t1" }\npagination = { style = "cursor", cursor_param = "after" }'), "pagination.next_cursor: style 'cursor' needs it"),
        (('input = { type = "object"', 'input = { type = "thing"'), "actions[0] (get_thing).input: not a valid JSON Schema"),
        (('sample = { id = "t1" }', ""), "required field missing @ actions[0].sample"),
    ],
)
def test_bad_values_are_refused_naming_the_key(change, expected):
    assert expected in refused(ACTION.replace(*change))


def test_a_duplicate_action_name_is_refused():
    assert "actions: 'get_thing' is declared twice" in refused(ACTION + ACTION.split('provider = "acme"')[1])


def test_a_webhook_trigger_needs_the_webhooks_table():
    text = ACTION + """
[[triggers]]
name = "thing_created"
title = "Thing created"
docs = "https://docs.acme.test/webhooks"
kind = "webhook"
events = ["thing.created"]
sample = { id = "t1" }
"""
    assert "triggers[0] (thing_created): a webhook trigger needs the file's [webhooks] table" in refused(text)


def test_a_poll_trigger_needs_its_request_items_and_cursor():
    text = ACTION + """
[[triggers]]
name = "new_thing"
title = "New thing"
docs = "https://docs.acme.test/things#list"
kind = "poll"
sample = { id = "t1" }
"""
    message = refused(text)
    for key in ("request", "items", "cursor"):
        assert f"triggers[0] (new_thing).{key}: a poll trigger needs it" in message


def test_not_toml_is_refused_naming_the_file():
    assert "not valid TOML" in refused("provider = ")


def test_two_files_declaring_one_provider_are_refused(tmp_path):
    for folder in ("acme", "acme_copy"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "actions.toml").write_text(ACTION)
    with pytest.raises(DeclarationError, match=r"providers/acme_copy/actions.toml: provider 'acme' is also declared in providers/acme/actions.toml"):
        declarations(tmp_path)
