"""Every constraint ``/openapi.json`` publishes on a request body is one the server enforces.

The test walks the document's request-body schemas and, for each constrained field (``minLength``,
``maxLength``, ``pattern``, ``minimum``, ``maximum``, ``minItems``, ``maxItems``, ``enum``,
``const``, on nested objects and array items too), sends a running app a body that is valid
(:data:`EXAMPLES`, checked against the published schema) but for that one field, set just outside
the constraint; the answer must be a 400 whose message names the field by its dotted path
(``steps[0].id``). A body a model publishes but no example covers fails the test, so a new
constraint cannot go untested. Form bodies (the identity provider's, ``application/x-www-form-urlencoded``)
are read by the OAuth and OpenID Connect code and refused in the protocol's own errors; they are not
walked here."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import aiohttp
import jsonschema

JSON = "application/json"
CONSTRAINTS = ("minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "enum", "const")

#: a body each operation takes, valid against its schema, with an item in every array whose
#: items are constrained (the mutation of ``steps[].id`` needs a step)
EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/oidc/register"): {
        "client_name": "Client",
        "redirect_uris": ["https://app.example.com/cb"],
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "application": "app",
        "permissions": ["flows.view"],
    },
    ("POST", "/byoa/{providerType}/credentials"): {"clientId": "id", "clientSecret": "secret"},
    ("PATCH", "/connect/v1/integrations/{providerType}"): {
        "clientId": "id",
        "clientSecret": "secret",
        "scopes": ["a"],
        "apiBaseUrl": "https://api.example.com",
    },
    ("PATCH", "/connect/v1/deployment/integrations/{providerType}"): {
        "clientId": "id",
        "clientSecret": "secret",
        "scopes": ["a"],
        "apiBaseUrl": "https://api.example.com",
        "webhookSecret": "s",
        "webhookVerifyToken": "t",
    },
    ("POST", "/connect/v1/alerts"): {"channel": "email", "target": "ops@example.com", "eventTypes": ["flow.failed"]},
    ("PATCH", "/connect/v1/alerts/{subscriptionId}"): {"target": "ops@example.com", "eventTypes": ["flow.failed"]},
    ("POST", "/connect/v1/flow-templates/{slug}/clone"): {"name": "Flow"},
    ("POST", "/connect/v1/flows"): {"name": "Flow", "description": "d", "steps": [{"id": "t", "type": "transform", "output": {}}]},
    ("PATCH", "/connect/v1/flows/{flowId}"): {"name": "Flow", "description": "d", "steps": [{"id": "t", "type": "transform", "output": {}}]},
    ("POST", "/connect/v1/flows/{flowId}/publish-as-template"): {"visibility": "private", "category": "custom"},
    ("PUT", "/connect/v1/flows/settings"): {"errorFlowId": "f", "maxConcurrentExecutions": 2},
    ("POST", "/connect/v1/flows/{flowId}/executions/{executionId}/retry"): {"fromStep": "b", "version": "current"},
    ("POST", "/connect/v1/flows/approvals/{approvalId}/decision"): {"decision": "approved", "note": "ok"},
    ("PATCH", "/connect/v1/workspaces/{id}/members/{userId}"): {"role": "manager"},
    ("POST", "/connect/v1/flows/approvals/decide"): {"token": "t"},
    ("POST", "/connect/v1/flows/{flowId}/schedules"): {"cron": "0 * * * *", "timezone": "UTC"},
    ("PATCH", "/connect/v1/flows/{flowId}/schedules/{scheduleId}"): {"cron": "0 * * * *", "timezone": "UTC"},
    ("POST", "/connect/v1/flows/{flowId}/triggers"): {"providerType": "hubspot", "triggerName": "contact.created", "kind": "webhook"},
    ("POST", "/connect/v1/tables"): {"name": "Table", "slug": "table", "columns": [{"name": "c", "type": "text"}]},
    ("PATCH", "/connect/v1/tables/{slug}"): {"name": "Table", "slug": "table", "columns": [{"name": "c", "type": "text"}]},
    ("POST", "/connect/v1/tables/{slug}/rows"): {"data": {}, "external_key": "k"},
    ("POST", "/connect/v1/tables/{slug}/rows/upsert"): {"data": {}, "external_key": "k"},
    ("PATCH", "/connect/v1/tables/{slug}/rows/{rowId}"): {"data": {}, "external_key": "k"},
    ("POST", "/connect/v1/webhooks/{type}/subscribe"): {
        "url": "https://example.com/hook",
        "events": ["contact.created"],
        "eventType": "contact.created",
        "callbackSecret": "s3cret-s3cret",
    },
    ("PATCH", "/connect/v1/webhooks/{type}/subscribe/{id}"): {"events": ["contact.created"], "eventType": "contact.created"},
    ("POST", "/connect/v1/webhooks/{type}/subscribe/{id}/rotate-secret"): {"callbackSecret": "s3cret-s3cret", "overlapSeconds": 0},
    ("POST", "/crm/push-batch/{accountId}"): {"crmSyncStatus": ["none"]},
}

#: path parameters: the names of things that exist where a handler looks one up before the body
PATH_VALUES = {"providerType": "hubspot", "type": "hubspot"}


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def constrained_fields(schema: dict[str, Any], components: dict[str, Any], path: tuple = ()) -> list[tuple[tuple, str, dict[str, Any]]]:
    """``(path, keyword, the schema holding it)`` of every constraint, ``path`` a tuple of keys and
    ``0`` for an array's first item; the members of ``anyOf`` (``X | None``) are looked into."""
    schema = _resolve(schema, components)
    found = [(path, keyword, schema) for keyword in CONSTRAINTS if keyword in schema]
    for member in schema.get("anyOf", []) + schema.get("allOf", []):
        found += constrained_fields(member, components, path)
    for name, field in schema.get("properties", {}).items():
        found += constrained_fields(field, components, (*path, name))
    if "items" in schema:
        found += constrained_fields(schema["items"], components, (*path, 0))
    return found


def outside(keyword: str, schema: dict[str, Any]) -> Any:
    """A value just outside ``schema``'s ``keyword`` that keeps its other constraints where it can."""
    limit = schema[keyword]
    if keyword == "minLength":
        return "x" * (limit - 1)
    if keyword == "maxLength":
        return "x" * (limit + 1)
    if keyword == "pattern":
        fitting = [text for text in (" ", '"', "Not a slug!", "\t", "") if not re.search(limit, text)]
        return next(text for text in fitting if schema.get("minLength", 0) <= len(text) <= schema.get("maxLength", 10**9))
    if keyword in ("minimum", "exclusiveMinimum"):
        return limit - 1 if keyword == "minimum" else limit
    if keyword in ("maximum", "exclusiveMaximum"):
        return limit + 1 if keyword == "maximum" else limit
    if keyword == "minItems":
        return []
    if keyword == "maxItems":
        return ["x"] * (limit + 1)
    return "not-one-of-them"  # enum, const


def with_value(body: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def dotted(path: tuple) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def cases(document: dict[str, Any]) -> list[tuple[str, str, str, tuple, str, Any, dict[str, Any]]]:
    components = document["components"]["schemas"]
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if JSON not in content:
                continue
            schema = {**content[JSON]["schema"], "components": {"schemas": components}}
            constrained = constrained_fields(content[JSON]["schema"], components)
            if not constrained:
                continue
            example = EXAMPLES.get((method.upper(), path))
            assert example is not None, f"{method.upper()} {path} publishes constraints and has no example in EXAMPLES"
            validator = jsonschema.Draft202012Validator(_with_components(schema))
            assert not list(validator.iter_errors(example)), f"the example of {method.upper()} {path} is not valid: {list(validator.iter_errors(example))}"
            for field, keyword, holder in constrained:
                value = outside(keyword, holder)
                body = with_value(example, field, value)
                assert list(validator.iter_errors(body)), f"{method.upper()} {path}: {dotted(field)}={value!r} is not outside {keyword}"
                found.append((method.upper(), path, keyword, field, dotted(field), value, body))
    return found


def _with_components(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with ``#/components/schemas/...`` references resolvable from its root."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _url_path(path: str, workspace_id: str) -> str:
    return re.sub(r"\{([^}]+)\}", lambda match: PATH_VALUES.get(match.group(1), workspace_id if match.group(1) == "accountId" else "missing-id"), path)


async def test_every_published_constraint_is_enforced_naming_the_field(live_api):
    async with aiohttp.ClientSession() as http:
        async with http.get(live_api.base_url + "/openapi.json") as answer:
            document = await answer.json()
        found = cases(document)
        assert len({(method, path) for method, path, *_ in found}) >= len(EXAMPLES), "an example names an operation without constraints"
        wrong = []
        for method, path, keyword, _field, name, value, body in found:
            url = live_api.base_url + _url_path(path, live_api.workspace["workspace_id"])
            async with http.request(method, url, json=body, headers=live_api.headers) as answer:
                status, text = answer.status, await answer.text()
            reply = _json(text)
            message = str(reply.get("message") or reply.get("error_description") or "")
            named = name in message if "message" in reply else name.split("[")[0].split(".")[0] in message  # RFC 7591 words its own
            if status != 400 or not named:
                wrong.append(f"{method} {path} {name} {keyword}={value!r}: {status} {text[:300]}")
        assert not wrong, "\n".join(wrong)


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def test_outside_values_break_exactly_their_constraint():
    assert outside("minLength", {"minLength": 8}) == "x" * 7
    assert outside("maxLength", {"maxLength": 3}) == "xxxx"
    assert outside("pattern", {"pattern": r"\S"}) == " "
    assert outside("minimum", {"minimum": 0}) == -1
    assert outside("minItems", {"minItems": 1}) == []
    assert dotted(("steps", 0, "id")) == "steps[0].id"
