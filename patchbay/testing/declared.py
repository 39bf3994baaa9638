"""The pack acceptance checks of a provider's declared actions and triggers
(``providers/<provider>/actions.toml``), run against a real app and the :class:`FakeProviderAPI`.

What each file documents is what is checked: every action's ``example`` is sent through
``POST /api/execute`` and the provider call it makes is compared with what the format says the
request is (method, each path segment, query, JSON or form body, headers), the fake answering the
documented ``sample`` (with a next page where the action pages); the result is the ``sample``'s
selection and satisfies ``output.schema``. Each input schema accepts the ``example`` and refuses
every property given a value of the wrong type, over HTTP too (400, no provider call). Each poll
trigger polls its documented ``response``. Each webhook trigger's delivery, signed the way
``[webhooks]`` declares, is stored through ``POST /webhook/{provider}`` and read as the trigger's
item; a bad signature is refused, and a declared handshake is answered.

The expected request is written here from the format's description, independently of the runner
that builds it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import jmespath

from patchbay.core.declared.format import Action, Declaration, Request, Trigger, Webhooks
from patchbay.core.declared.loader import declarations
from patchbay.testing.fakes import RecordedRequest

#: the deployment's webhook_secret the acceptance app is given
WEBHOOK_SECRET = "acceptance-webhook-secret"
_WRONG = {"string": 12345, "integer": "twelve", "number": "twelve", "boolean": "yes", "array": "x", "object": "x", "null": "x"}


def declaration_of(provider_name: str) -> Declaration | None:
    """The declaration naming ``provider_name`` (itself or in ``also``), if any."""
    return next((d for d in declarations() if provider_name in d.providers), None)


# -- the expected call, from the format's description ------------------------------------------


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _nest(target: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value


def expected_call(request: Request, values: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    """``method``, ``segments`` (each path segment, decoded), ``query``, ``json`` or ``form`` and
    ``headers`` of the first call ``request`` makes with ``values``."""
    given = {name: value for name, value in values.items() if value is not None}
    segments = ["".join(_text(given[part[1:-1]]) if part.startswith("{") else part for part in _split_template(seg)) for seg in request.path.split("/")]
    query = {key: _text(value) for key, value in request.fixed_query.items()}
    query.update({param: _text(given[name]) for param, name in request.query.items() if name in given})
    sent_headers = {**headers, **request.headers, **{header: _text(given[name]) for header, name in request.input_headers.items() if name in given}}
    call: dict[str, Any] = {"method": request.method, "segments": segments, "query": query, "headers": sent_headers, "json": None, "form": None}
    if request.graphql is not None:
        variables = json.loads(json.dumps(request.graphql.fixed_variables))
        for path, name in request.graphql.variables.items():
            if name in given:
                _nest(variables, path, given[name])
        call.update(method="POST", json={"query": request.graphql.document, "variables": variables})
    elif request.body or request.fixed_body:
        body = json.loads(json.dumps(request.fixed_body))
        if request.body_format == "form":
            body.update({key: given[name] for key, name in request.body.items() if name in given})
            call["form"] = {key: _text(value) for key, value in body.items()}
        else:
            for path, name in request.body.items():
                if name in given:
                    _nest(body, path, given[name])
            call["json"] = body
    return call


def _split_template(segment: str) -> list[str]:
    parts, rest = [], segment
    while "{" in rest:
        before, _, after = rest.partition("{")
        name, _, rest = after.partition("}")
        parts += [before, "{" + name + "}"]
    return [*parts, rest]


def assert_call(seen: RecordedRequest, expected: dict[str, Any], *, credential: tuple[Mapping, Mapping], where: str) -> None:
    """``seen`` is the call ``expected`` describes, apart from what the connection's ``credential``
    (its injected headers and query, which win over the file's) sets."""
    credential_headers = {name.lower() for name in credential[0]}
    ignore_query = set(credential[1])
    assert seen.method == expected["method"], f"{where}: sent {seen.method}, the file says {expected['method']}"
    segments = [unquote(segment) for segment in seen.raw_path.split("/")]
    assert segments == expected["segments"], f"{where}: path {seen.raw_path!r} is not {'/'.join(expected['segments'])!r}, one segment per placeholder"
    query = {key: value for key, value in seen.query.items() if key not in ignore_query}
    assert query == expected["query"], f"{where}: query {query!r}, expected {expected['query']!r}"
    for name, value in expected["headers"].items():
        if name.lower() in credential_headers:
            continue
        assert seen.headers.get(name) == value, f"{where}: header {name} is {seen.headers.get(name)!r}, expected {value!r}"
    if expected["json"] is not None:
        assert json.loads(seen.body) == expected["json"], f"{where}: JSON body {seen.body[:300]!r}, expected {expected['json']!r}"
    elif expected["form"] is not None:
        assert dict(parse_qsl(seen.body.decode(), keep_blank_values=True)) == expected["form"], f"{where}: form body {seen.body[:300]!r}"
    else:
        assert seen.body == b"", f"{where}: a body was sent where the file declares none"


# -- actions -----------------------------------------------------------------------------------


def _pagination_query(pagination) -> dict[str, str]:
    """The paging parameters of the first page."""
    if pagination is None:
        return {}
    query = {pagination.size_param: str(pagination.page_size)} if pagination.size_param else {}
    if pagination.style == "offset":
        query[pagination.offset_param] = "0"
    elif pagination.style == "page":
        query[pagination.page_param] = str(pagination.first_page)
    return query


def _next_page(action_or_trigger: Action | Trigger, first_answer: Any, fake_url: str) -> tuple[Any, dict[str, str], str | None]:
    """The first page as the fake serves it (its next URL aimed at the fake), its headers, and the
    path and query the runner must ask next (None when it must stop after it)."""
    pagination = action_or_trigger.pagination
    if pagination is None:
        return first_answer, {}, None
    if pagination.style == "link":
        return first_answer, {"Link": f'<{fake_url}/patchbay-acceptance/next?page=2>; rel="next"'}, "/patchbay-acceptance/next?page=2"
    if pagination.style == "next_url":
        url = jmespath.search(pagination.next_url, first_answer)
        if not url:
            return first_answer, {}, None
        parts = urlsplit(url)
        relative = parts.path + (f"?{parts.query}" if parts.query else "")
        served = json.loads(json.dumps(first_answer).replace(json.dumps(url), json.dumps(fake_url + relative if parts.scheme else url)))
        return served, {}, relative
    return first_answer, {}, None


async def check_declared_actions(harness, declaration: Declaration) -> int:
    """Each action's example through ``POST /api/execute``: the provider call is the declared one,
    the result the sample's selection (satisfying ``output.schema``); the number checked."""
    import jsonschema

    from patchbay.testing.plugin import TEST_CREDENTIALS

    client = await harness.client()
    credential = harness.auth.inject(harness.provider, TEST_CREDENTIALS, client.params)
    for action in declaration.actions:
        where = f"{harness.provider_name}.{action.name}"
        first, headers, next_path = _next_page(action, action.sample, harness.fake.url)
        empty = _empty_page(action.output.select, graphql=action.request.graphql is not None)
        answers = iter([(200, first, headers)])
        harness.fake.requests.clear()
        harness.fake.default = lambda _seen, answers=answers, empty=empty: next(answers, (200, empty))
        try:
            response = await harness.http.post(
                "/api/execute",
                json={"connectionId": harness.connection_id, "action": f"{harness.provider_name}.{action.name}", "inputs": dict(action.example)},
                headers=harness.workspace["headers"],
            )
            text = await response.text()
        finally:
            harness.fake.default = (200, {})
        assert response.status == 201, f"{where}: /api/execute answered {response.status}: {text[:500]}"
        result = json.loads(text)["data"]
        seen = harness.fake.requests
        assert seen, f"{where}: no provider call was made"
        expected = expected_call(action.request, action.example, declaration.headers)
        expected["query"].update(_pagination_query(action.pagination))
        assert_call(seen[0], expected, credential=credential, where=where)
        answer = action.sample["data"] if action.request.graphql is not None else action.sample
        selected = jmespath.search(action.output.select, answer) if action.output.select else answer
        assert result == selected, f"{where}: answered {result!r}, the sample selects {selected!r}"
        if next_path is not None:
            assert len(seen) == 2, f"{where}: {len(seen)} calls; the next page was not asked for, or paging did not stop on an empty one"
            wanted = urlsplit(next_path)
            asked = (seen[1].path, {key: value for key, value in seen[1].query.items() if key not in credential[1]})
            assert asked == (unquote(wanted.path), dict(parse_qsl(wanted.query))), f"{where}: asked {asked!r} for the next page, not {next_path!r}"
        if action.pagination is not None and action.pagination.style == "cursor" and jmespath.search(action.pagination.next_cursor, answer):
            cursor = jmespath.search(action.pagination.next_cursor, answer)
            assert len(seen) == 2, f"{where}: the sample's cursor did not ask for a next page"
            if action.pagination.cursor_param:
                assert seen[1].query.get(action.pagination.cursor_param) == _text(cursor), f"{where}: the next page was not asked with the cursor"
        if action.output.schema is not None:
            jsonschema.Draft202012Validator(action.output.schema).validate(result)
    return len(declaration.actions)


def _empty_page(items: str | None, *, graphql: bool) -> Any:
    """A page holding no items: where ``items`` is a path of fields, an empty list there; else an
    empty list (a filter or projection of the whole answer)."""
    try:
        page = _built(items, [])
    except ValueError:
        page = []
    return {"data": page} if graphql else page


def wrong_values(schema: Mapping[str, Any]) -> dict[str, Any]:
    """For each property of ``schema`` whose type or values it fixes, a value it must refuse."""
    wrong = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if isinstance(kind, str) and kind in _WRONG:
            wrong[name] = _WRONG[kind]
        elif "enum" in prop or "const" in prop:
            wrong[name] = {"not": "one of its values"}
    return wrong


async def check_declared_inputs(harness, declaration: Declaration) -> int:
    """Each input schema (as registered) accepts the example and refuses each property given a
    wrongly typed value, naming it; over ``POST /api/execute`` a wrongly typed required input
    answers 400 before any provider call. The number of refusals checked."""
    import jsonschema

    from patchbay.core.actions.inputs import check_inputs
    from patchbay.core.errors import Invalid

    registered = harness.registry.get("actions", harness.provider_name) or {}
    checked = 0
    for action in declaration.actions:
        where = f"{harness.provider_name}.{action.name}"
        schema = registered[action.name].inputs
        assert not list(jsonschema.Draft202012Validator(schema).iter_errors(dict(action.example))), f"{where}: the example fails its input schema"
        for name, value in wrong_values(schema).items():
            try:
                check_inputs(schema, {**action.example, name: value})
            except Invalid as error:
                assert f"inputs.{name}" in str(error), f"{where}: refusing {name}={value!r} named {error}"
            else:
                raise AssertionError(f"{where}: inputs.{name} = {value!r} is accepted")
            checked += 1
        required = [name for name in schema.get("required") or () if name in wrong_values(schema)]
        if required:
            harness.fake.requests.clear()
            response = await harness.http.post(
                "/api/execute",
                json={
                    "connectionId": harness.connection_id,
                    "action": f"{harness.provider_name}.{action.name}",
                    "inputs": {**action.example, required[0]: wrong_values(schema)[required[0]]},
                },
                headers=harness.workspace["headers"],
            )
            body = await response.json()
            assert response.status == 400 and f"inputs.{required[0]}" in body["message"], f"{where}: a wrong {required[0]} answered {response.status} {body}"
            assert harness.fake.requests == [], f"{where}: a refused input still called the provider"
    return checked


# -- poll triggers -----------------------------------------------------------------------------


async def check_declared_polls(harness, declaration: Declaration) -> int:
    """Each poll trigger, served its documented ``response``: the declared request, a first poll
    that only sets the cursor, then the response's items (those with a cursor value) oldest
    first."""
    from patchbay.testing.plugin import TEST_CREDENTIALS

    registered = harness.registry.get("triggers", harness.provider_name) or {}
    polls = [trigger for trigger in declaration.triggers if trigger.kind == "poll"]
    client = await harness.client()
    credential = harness.auth.inject(harness.provider, TEST_CREDENTIALS, client.params)
    for trigger in polls:
        where = f"{harness.provider_name} trigger {trigger.name}"
        poll = registered[trigger.name]
        first, headers, _ = _next_page(trigger, trigger.response, harness.fake.url)
        empty = _empty_page(trigger.items, graphql=trigger.request.graphql is not None)
        for cursor in (None, {"after": None}):
            answers = iter([(200, first, headers)])
            harness.fake.requests.clear()
            harness.fake.default = lambda _seen, answers=answers, empty=empty: next(answers, (200, empty))
            try:
                items, after = await poll.poll(client, dict(trigger.example), cursor)
            finally:
                harness.fake.default = (200, {})
            expected = expected_call(trigger.request, trigger.example, declaration.headers)
            expected["query"].update(_pagination_query(trigger.pagination))
            assert_call(harness.fake.requests[0], expected, credential=credential, where=where)
            found = jmespath.search(trigger.items, trigger.response) or []
            marked = [item for item in found if jmespath.search(trigger.cursor, item) is not None]
            assert found and marked, f"{where}: the documented response holds no item with a cursor value"
            if cursor is None:
                assert items == [] and after == {"after": max(jmespath.search(trigger.cursor, item) for item in marked)}, (
                    f"{where}: first poll {items!r} {after!r}"
                )
            else:
                assert sorted(map(json.dumps, items)) == sorted(map(json.dumps, marked)), f"{where}: polled {items!r}"
                assert all(poll.item_id(item) not in ("", "None") for item in items), f"{where}: an item without its id"
    return len(polls)


# -- webhooks ----------------------------------------------------------------------------------


def sign(webhooks: Webhooks, body: bytes, secret: str, timestamp: int, url: str = "") -> dict[str, str]:
    """The headers the provider sends with ``body``, as ``verify`` describes them."""
    verify = webhooks.verify
    if verify.scheme == "none":
        return {}
    if verify.scheme == "token":
        return {verify.header: secret}
    stamp = str(timestamp)
    signed = verify.signed.replace("{timestamp}", stamp).replace("{url}", url).encode().replace(b"{body}", body)
    digest = hmac.new(secret.encode(), signed, getattr(hashlib, verify.algorithm)).digest()
    signature = verify.prefix + (digest.hex() if verify.encoding == "hex" else base64.b64encode(digest).decode())
    if verify.signature_key:
        signature = (f"{verify.timestamp_key}={stamp}," if verify.timestamp_key else "") + f"{verify.signature_key}={signature}"
    return {verify.header: signature, **({verify.timestamp_header: stamp} if verify.timestamp_header else {})}


def _built(expression: str | None, value: Any) -> Any:
    """A value that ``expression`` (a path of fields, or ``@``) selects ``value`` from; raises
    ``ValueError`` for any other expression."""
    if expression is None:
        return value
    node = jmespath.compile(expression).parsed

    def build(node: dict, inner: Any) -> Any:
        if node["type"] in ("current", "identity"):
            return inner
        if node["type"] == "field":
            return {node["value"]: inner}
        if node["type"] == "subexpression":
            left, right = node["children"]
            return build(left, build(right, inner))
        raise ValueError(f"cannot build a body for {expression!r}")

    return build(node, value)


def _merged(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **{key: _merged(a[key], value) if key in a else value for key, value in b.items()}}
    return b


def delivery_of(webhooks: Webhooks, trigger: Trigger) -> tuple[bytes, dict[str, str]] | None:
    """A delivery carrying ``trigger``'s first event (its ``delivery``, or one built from the
    selectors and ``sample``) and the header naming its type; None when none can be built."""
    headers = {webhooks.event_type_header: trigger.events[0]} if webhooks.event_type_header else {}
    if trigger.delivery is not None:
        return json.dumps(trigger.delivery).encode(), headers
    try:
        event = _built(trigger.item, dict(trigger.sample))
        if webhooks.event_type is not None:
            event = _merged(event, _built(webhooks.event_type, trigger.events[0]))
        body = _built(webhooks.events, [event]) if webhooks.events is not None else event
    except ValueError:
        return None
    return json.dumps(body).encode(), headers


def _contains(data: Any, sample: Any) -> bool:
    if isinstance(sample, dict):
        return isinstance(data, dict) and all(key in data and _contains(data[key], value) for key, value in sample.items())
    return data == sample


async def check_declared_webhooks(harness, declaration: Declaration) -> int:
    """Each webhook trigger's delivery, signed as declared, is stored through ``POST
    /webhook/{provider}`` (with the type a header names) and read as the trigger's event and item;
    a wrong signature, a tampered body (HMAC) and a missing one answer 401 and store nothing; a
    declared handshake is answered. The number of triggers checked."""
    hooks = declaration.webhooks
    if hooks is None:
        return 0
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.webhooks.models import WebhookEvent

    handler = harness.registry.get("webhooks", harness.provider_name)
    url = f"/webhook/{harness.provider_name}"
    full_url = harness.app[SERVICES].settings.public_base_url + url  # what a {url} in the signed string stands for
    triggers = [trigger for trigger in declaration.triggers if trigger.kind == "webhook"]
    for trigger in triggers:
        where = f"{harness.provider_name} trigger {trigger.name}"
        built = delivery_of(hooks, trigger)
        body, type_headers = built if built is not None else (json.dumps(dict(trigger.sample)).encode(), {})
        now = int(time.time())
        stored = await harness.http.post(
            url, data=body, headers={**type_headers, **sign(hooks, body, WEBHOOK_SECRET, now, full_url), "Content-Type": "application/json"}
        )
        assert stored.status == 200, f"{where}: a signed delivery answered {stored.status}: {await stored.text()}"
        event_id = (await stored.json())["id"]
        async with harness.app[SERVICES].db.session() as session:
            row = await session.get(WebhookEvent, event_id)
        assert row is not None and row.body == body.decode()
        if hooks.event_type_header:
            assert row.event_type == trigger.events[0], f"{where}: the type in {hooks.event_type_header} was not stored"
        for headers, payload in [
            ({**type_headers, **sign(hooks, body, "not-the-secret", now, full_url)}, body),
            (type_headers, body),
            *([({**type_headers, **sign(hooks, body, WEBHOOK_SECRET, now, full_url)}, body + b" ")] if hooks.verify.scheme == "hmac" else []),
        ]:
            refused = await harness.http.post(url, data=payload, headers=headers)
            assert refused.status == (200 if hooks.verify.scheme == "none" else 401), f"{where}: a badly signed delivery answered {refused.status}"
        if built is None:
            continue  # the selectors are not plain paths and no delivery is documented: verification only
        events = list(handler.typed_events(json.loads(body), row.event_type))
        assert events and events[0].type == trigger.events[0], f"{where}: the delivery reads as {events!r}"
        data = dict(events[0].data)
        assert _contains(data, dict(trigger.sample)), f"{where}: the item read is {data!r}, which does not hold the sample"
    if hooks.handshake is not None:
        await _check_handshake(harness, hooks, url)
    return len(triggers)


async def _check_handshake(harness, hooks: Webhooks, url: str) -> None:
    handshake, where = hooks.handshake, f"{harness.provider_name} handshake"
    if handshake.style == "echo_query":
        answer = await harness.http.get(url, params={handshake.name: "acceptance-challenge"})
        assert answer.status == 200 and await answer.text() == "acceptance-challenge", f"{where}: answered {answer.status}"
        assert answer.headers["Content-Type"].startswith("text/plain") and answer.headers["X-Content-Type-Options"] == "nosniff"
    elif handshake.style == "echo_header":
        answer = await harness.http.post(url, headers={handshake.name: "acceptance-hook-secret"})
        assert answer.status == 200 and answer.headers.get(handshake.name) == "acceptance-hook-secret", f"{where}: answered {answer.status}"
    else:
        body = json.dumps(_merged(_built(hooks.event_type, handshake.event), _built(handshake.token, "acceptance-plain-token"))).encode()
        answer = await harness.http.post(url, data=body, headers=sign(hooks, body, WEBHOOK_SECRET, int(time.time())))
        assert answer.status == 200, f"{where}: a signed handshake answered {answer.status}"
        token_hmac = hmac.new(WEBHOOK_SECRET.encode(), b"acceptance-plain-token", hashlib.sha256).hexdigest()
        assert await answer.json() == {handshake.name: "acceptance-plain-token", handshake.signature_key: token_hmac}
        unsigned = await harness.http.post(url, data=body)
        assert unsigned.status == 401, f"{where}: an unsigned handshake answered {unsigned.status}: it would sign any token"
