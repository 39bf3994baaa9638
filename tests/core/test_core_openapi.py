"""/openapi.json documents every route, and every route of the interface specification is served."""

import re
from pathlib import Path

import openapi_spec_validator
import pytest

from patchbay.core.http.openapi import route_paths

#: The interface specification sits in the steering repository's ``shared/`` folder beside this
#: one; a clone made anywhere else has no such folder, and the test that reads it skips.
SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "interface-spec.md"

#: Routes the spec gives in prose rather than in a table.
PROSE_ROUTES = {
    ("POST", "/connect/v1/proxy/{}"),
    ("GET", "/connect/v1/task-history"),
    ("GET", "/.well-known/openid-configuration"),
    ("POST", "/api/v1/oidc/register"),
    ("GET", "/api/v1/oidc/authorize"),
    ("POST", "/api/v1/oidc/token"),
    ("GET", "/api/v1/oidc/userinfo"),
    ("POST", "/api/v1/oidc/userinfo"),
    ("GET", "/api/v1/oidc/jwks"),
    ("POST", "/api/v1/oidc/introspect"),
    ("POST", "/api/v1/oidc/revoke"),
    ("GET", "/api/v1/oidc/end-session"),
}

#: Section prefixes the spec states in the table headings ("(prefix /connect/v1)"); 4.7 has none
#: written, but 9.1 puts every route not listed as unprefixed under /connect/v1.
EXTRA_PREFIXES = {"4.7": "/connect/v1"}


def normalise(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path.rstrip("/") or "/")


def spec_routes() -> set[tuple[str, str]]:
    routes = set(PROSE_ROUTES)
    section, prefix = None, ""
    for line in SPEC.read_text().splitlines():
        heading = re.match(r"^### (4\.\d+) (.*)$", line)
        if heading:
            section = heading.group(1)
            found = re.search(r"prefix (/[\w/.-]+)", heading.group(2))
            prefix = found.group(1) if found else EXTRA_PREFIXES.get(section, "")
            continue
        row = re.match(r"^\| (GET|POST|PATCH|PUT|DELETE) \| (/\S*) \|", line)
        if row and section:
            path = row.group(2)
            if section == "4.21" or not path.startswith(("/connect/", "/api/")):
                path = prefix + path if prefix and not path.startswith(prefix + "/") else path
            routes.add((row.group(1), normalise(path)))
        if section == "4.22" and line.startswith("All are GET"):
            routes.update(("GET", normalise(p)) for p in re.findall(r"(/api/cron/[\w-]+)", line))
    return routes


@pytest.fixture
async def document_and_app(client):
    response = await client.get("/openapi.json")
    assert response.status == 200
    return await response.json(), client.server.app


async def test_every_operation_declares_what_it_answers(document_and_app):
    """No operation is left with the ``default`` placeholder: each declares a success (2xx or 3xx)
    answer with its media type and schema, or the headers of a body-less answer."""
    document, _ = document_and_app
    undeclared = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            successes = [answer for status, answer in operation["responses"].items() if status[0] in "23"]
            if "default" in operation["responses"] or not any(
                answer.get("content") or answer.get("headers") or "no body" in answer["description"] for answer in successes
            ):
                undeclared.append(f"{method.upper()} {path}")
    assert undeclared == []


async def test_every_route_is_in_the_document_with_a_summary(document_and_app):
    document, app = document_and_app
    assert document["openapi"].startswith("3.1")
    undocumented = []
    for method, path, _handler in route_paths(app):
        operation = document["paths"].get(path, {}).get(method.lower())
        if not operation or not operation["summary"]:
            undocumented.append(f"{method} {path}")
    assert undocumented == []


async def test_every_spec_route_is_served(document_and_app):
    if not SPEC.is_file():
        pytest.skip(f"the interface specification is not beside this clone ({SPEC})")
    _document, app = document_and_app
    served = {(method, normalise(path)) for method, path, _ in route_paths(app)}
    expected = spec_routes()
    assert len(expected) > 150  # the parse found the tables
    missing = sorted(f"{method} {path}" for method, path in expected - served)
    assert missing == []


async def test_protected_routes_list_their_permissions(document_and_app):
    document, _app = document_and_app
    operation = document["paths"]["/connect/v1/providers"]["get"]
    assert operation["security"] and operation["x-permissions"] == []


async def test_security_schemes_and_area_tags(document_and_app):
    """The two ways in (``x-api-key`` and a bearer JWT) are the document's security schemes, every
    protected operation accepts either, and every operation is tagged with one of the API's areas
    (no tag per stray path segment such as ``livez`` or ``openapi.json``)."""
    document, _app = document_and_app
    assert document["components"]["securitySchemes"] == {
        "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
    }
    operations = [(path, operation) for path, item in document["paths"].items() for method, operation in item.items() if method != "parameters"]
    protected = [operation for _, operation in operations if "x-permissions" in operation]
    assert len(protected) > 100 and all(operation["security"] == [{"apiKey": []}, {"bearer": []}] for operation in protected)
    areas = {
        "service",
        "identity",
        "platform",
        "connections",
        "connect-ui",
        "providers",
        "integrations",
        "proxy",
        "webhooks",
        "flows",
        "tables",
        "records",
        "leads",
        "actions",
        "unified-crm",
        "workspaces",
        "billing",
        "approvals",
        "alerts",
        "compliance",
        "agents",
        "console",
    }
    assert {operation["tags"][0] for _, operation in operations} == areas
    assert all(len(operation["tags"]) == 1 for _, operation in operations)


async def test_the_document_is_valid_openapi(document_and_app):
    document, _app = document_and_app
    openapi_spec_validator.validate(document)  # unique operationIds, path parameters declared, a well-formed 3.1 document
    ids = [operation["operationId"] for item in document["paths"].values() for operation in item.values()]
    assert len(ids) == len(set(ids))


async def test_the_passthrough_proxy_route_is_documented_for_every_method(document_and_app):
    document, _app = document_and_app
    passthrough = document["paths"]["/connect/v1/proxy/{providerType}/{path}"]
    assert set(passthrough) == {"get", "post", "put", "patch", "delete"}
    assert {p["name"] for p in passthrough["get"]["parameters"]} == {"providerType", "path"}


async def test_one_name_per_path_parameter(document_and_app):
    """A flow is ``{flowId}`` and a provider ``{providerType}`` on every route."""
    document, _app = document_and_app
    names: dict[str, set[str]] = {}
    for path in document["paths"]:
        parts = path.split("/")
        for index, part in enumerate(parts):
            if part.startswith("{"):
                names.setdefault(normalise("/".join(parts[:index])), set()).add(part)
    assert names["/connect/v1/flows"] == {"{flowId}"}
    assert names["/connect/v1/providers"] == {"{providerType}"}
    assert names["/connect/v1/flows/{}/executions"] == {"{executionId}"}


async def test_request_bodies_come_from_the_models_that_validate_them(document_and_app):
    document, _app = document_and_app
    schemas = document["components"]["schemas"]
    connect = document["paths"]["/connect/v1/providers/{providerType}/connect"]["post"]["requestBody"]
    assert connect["required"] is True
    assert connect["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ConnectDto"}
    api_key = schemas["ApiKeyCredentials"]["properties"]["apiKey"]
    assert {"type": "string"} in api_key["anyOf"]
    toggle = document["paths"]["/connect/v1/flows/{flowId}/toggle"]["patch"]["requestBody"]
    assert toggle["required"] is False
    assert {"type": "boolean"} in schemas["ToggleDto"]["properties"]["isActive"]["anyOf"]
    assert schemas["Error"]["required"] == ["statusCode", "message"]
    assert document["paths"]["/connect/v1/flows"]["get"]["responses"]["4XX"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


async def test_page_lists_document_their_query_parameters(document_and_app):
    document, _app = document_and_app
    history = {p["name"]: p["schema"] for p in document["paths"]["/connect/v1/task-history"]["get"]["parameters"]}
    assert history["limit"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
    assert history["status"]["enum"] == ["pending", "running", "waiting", "completed", "failed"]
    providers = {p["name"] for p in document["paths"]["/connect/v1/providers"]["get"]["parameters"]}
    assert {"search", "category", "capability", "authMode", "page", "limit"} <= providers
