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
        (
            ('path = "/things/{id}"', 'path = "/things/{id}", input_headers = { "X-Tenant" = "tenant" }'),
            "actions[0] (get_thing).request.input_headers.X-Tenant: 'tenant' is not an input",
        ),
        (
            ('sample = { id = "t1" }', 'sample = { id = "t1" }\noutput = { select = "items[" }'),
            "actions[0] (get_thing).output.select: not a JMESPath expression",
        ),
        (
            ('sample = { id = "t1" }', 'sample = { id = "t1" }\npagination = { style = "cursor", cursor_param = "after" }'),
            "pagination.next_cursor: style 'cursor' needs it",
        ),
        (('input = { type = "object"', 'input = { type = "thing"'), "actions[0] (get_thing).input: not a valid JSON Schema"),
        (('sample = { id = "t1" }', ""), "required field missing @ actions[0].sample"),
    ],
)
def test_bad_values_are_refused_naming_the_key(change, expected):
    assert expected in refused(ACTION.replace(*change))


def test_a_duplicate_action_name_is_refused():
    assert "actions: 'get_thing' is declared twice" in refused(ACTION + ACTION.split('provider = "acme"')[1])


def test_a_webhook_trigger_needs_the_webhooks_table():
    text = (
        ACTION
        + """
[[triggers]]
name = "thing_created"
title = "Thing created"
docs = "https://docs.acme.test/webhooks"
kind = "webhook"
events = ["thing.created"]
sample = { id = "t1" }
"""
    )
    assert "triggers[0] (thing_created): a webhook trigger needs the file's [webhooks] table" in refused(text)


def test_a_poll_trigger_needs_its_request_items_and_cursor():
    text = (
        ACTION
        + """
[[triggers]]
name = "new_thing"
title = "New thing"
docs = "https://docs.acme.test/things#list"
kind = "poll"
sample = { id = "t1" }
"""
    )
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


GRAPHQL = """
provider = "acme"

[[actions]]
name = "create_issue"
title = "Create issue"
docs = "https://docs.acme.test/graphql#issueCreate"
input = { type = "object", required = ["team", "title"], properties = { team = { type = "string" }, title = { type = "string" }, priority = { type = "integer" } } }
example = { team = "T1", title = "Bug" }
request = { method = "POST", path = "/graphql", graphql = { document = "mutation Create($input: IssueInput!) { issueCreate(input: $input) { issue { id title } } }", variables = { "input.teamId" = "team", "input.title" = "title", "input.priority" = "priority" } } }
output = { select = "issueCreate.issue" }
sample = { data = { issueCreate = { issue = { id = "I1", title = "Bug" } } } }
"""


def test_a_graphql_request_parses():
    request = parse(GRAPHQL, "providers/acme/actions.toml").actions[0].request
    assert request.graphql.variables["input.title"] == "title" and request.graphql.document.startswith("mutation Create")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("variables = {", "vars = {}, variables = {"), "extra fields found (vars) @ actions[0].request.graphql"),
        (("{ issue { id title } } }", "{ issue { id title } }"), "actions[0] (create_issue).request.graphql.document: not a GraphQL document: Syntax Error"),
        (('"input.title" = "title"', '"input.title" = "title", "other.x" = "title"'), "request.graphql.variables.other: the document declares no $other"),
        (('"input.title" = "title"', '"input.title" = "name"'), "request.graphql.variables.input.title: 'name' is not an input"),
        (('required = ["team", "title"]', "required = []"), "request.graphql.variables.input: $input is non-null, so an input giving it must be required"),
        (
            ('variables = { "input.teamId" = "team", "input.title" = "title", "input.priority" = "priority" }', "variables = {}"),
            "request.graphql.document: $input is non-null and no variable gives it",
        ),
        (('method = "POST", path = "/graphql"', 'method = "GET", path = "/graphql"'), "request.graphql: a GraphQL request is a POST whose body it builds"),
        (('path = "/graphql"', 'path = "/graphql", fixed_body = { a = 1 }'), "request.graphql: a GraphQL request is a POST whose body it builds"),
        (("mutation Create(", "query Other { x } mutation Create("), "request.graphql.document: holds 2 operations; a request sends exactly one"),
        (("sample = { data = {", "sample = { answer = {"), "actions[0] (create_issue).sample: a GraphQL answer is an object with data"),
    ],
)
def test_bad_graphql_is_refused_naming_the_key(change, expected):
    assert change[0] in GRAPHQL
    assert expected in refused(GRAPHQL.replace(*change))


def test_a_non_null_variable_may_be_fixed():
    text = GRAPHQL.replace(
        'variables = { "input.teamId" = "team", "input.title" = "title", "input.priority" = "priority" }',
        'fixed_variables = { input = { teamId = "T1", title = "x" } }',
    )
    assert parse(text, "providers/acme/actions.toml").actions[0].request.graphql.fixed_variables == {"input": {"teamId": "T1", "title": "x"}}


SIGNED = (
    ACTION
    + """
[webhooks]
docs = "https://docs.acme.test/webhooks#signatures"
verify = { scheme = "hmac", header = "Acme-Signature", signed = "{timestamp}.{body}", signature_key = "v1", timestamp_key = "t", tolerance = 180 }
event_type = "event"
"""
)


def test_a_timestamped_signature_parses_and_the_old_keys_keep_their_meaning():
    verify = parse(SIGNED, "providers/acme/actions.toml").webhooks.verify
    assert (verify.signed, verify.signature_key, verify.timestamp_key, verify.tolerance) == ("{timestamp}.{body}", "v1", "t", 180)
    plain = parse(SIGNED.replace(', signed = "{timestamp}.{body}", signature_key = "v1", timestamp_key = "t", tolerance = 180', ""), "x").webhooks.verify
    assert (plain.signed, plain.timestamp_header, plain.signature_key, plain.tolerance) == ("{body}", None, None, 300)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("tolerance = 180", "tolerance = 180, window = 5"), "extra fields found (window) @ webhooks.verify"),
        (("tolerance = 180", 'tolerance = "180"'), "expected int @ webhooks.verify.tolerance"),
        (('"{timestamp}.{body}"', '"{timestamp}.{nonce}.{body}"'), "webhooks.verify.signed: unknown placeholder {nonce}"),
        (('"{timestamp}.{body}"', '"{timestamp}"'), "webhooks.verify.signed: names {body} exactly once"),
        (('"{timestamp}.{body}"', '"{body}"'), "webhooks.verify.signed: a timestamp read must be signed: add {timestamp}"),
        ((', timestamp_key = "t"', ""), "webhooks.verify.signed: {timestamp} needs timestamp_header or timestamp_key"),
        (('signature_key = "v1", ', ""), "webhooks.verify.timestamp_key: a keyed signature header needs signature_key too"),
        (
            ('timestamp_key = "t"', 'timestamp_key = "t", timestamp_header = "Acme-Time"'),
            "webhooks.verify.timestamp_header: the timestamp comes from timestamp_header or timestamp_key, not both",
        ),
        (("tolerance = 180", "tolerance = 0"), "webhooks.verify.tolerance: at least 1 second"),
        (('scheme = "hmac"', 'scheme = "token"'), "webhooks.verify.signed: only the hmac scheme signs a string"),
    ],
)
def test_bad_signature_keys_are_refused_naming_the_key(change, expected):
    assert change[0] in SIGNED
    assert expected in refused(SIGNED.replace(*change))
