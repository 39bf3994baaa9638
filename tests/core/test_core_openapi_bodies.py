"""Every operation that reads a request body declares it in ``/openapi.json`` with its model.

Whether a handler reads a body is told from its source: it (or a function of the project it calls,
two calls deep) reads the body with ``core.http.bodies`` (``read_body``, ``read_object``,
``read_form``...) or with ``request.post()``, ``request.json()``, ``request.read()`` and the like.
The few operations that read a body of a shape no model of ours describes (a third party's
callback, the proxy's passthrough) are listed with the reason, and the list is checked both ways."""

from __future__ import annotations

import inspect
import re
import types

from patchbay.core.http.openapi import build_document, route_paths

READS_BODY = re.compile(
    r"\b(read_body|read_object|read_json|read_form|read_checked|read_dto|read_alert|read_policy_changes|read_session_request|parse_json)\("
    r"|request\.(post|json|text|multipart)\(|request\.content\b|await request\.read\(\)"
)

#: (method, path) -> why the document declares no request body for it
UNDECLARED = {
    ("POST", "/billing/webhook"): "the payment provider's event, checked by its signature, in the provider's shape",
    ("POST", "/webhook/{providerType}"): "a provider's webhook, in the provider's shape",
    ("POST", "/compliance/data-deletion"): "a provider's deletion callback (form or JSON), fields its pack defines",
    ("POST", "/connect/v1/workspaces/{id}/join-requests/{requestId}/deny"): "shares the approve handler's code, reads no body when denying",
    **{
        (method, "/connect/v1/proxy/{providerType}/{path}"): "passes the caller's body through to the provider's API"
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
    },
    **{(method, "/mcp"): "Model Context Protocol JSON-RPC messages, read by the official SDK's transport" for method in ("GET", "POST", "DELETE")},
}


def reads_body(function, depth: int = 0, seen: set | None = None) -> bool:
    """Whether ``function`` or a project function it calls (up to two calls deep) reads the body."""
    seen = set() if seen is None else seen
    function = inspect.unwrap(function)
    if function in seen or depth > 2:
        return False
    seen.add(function)
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    if READS_BODY.search(source):
        return True
    names = getattr(function, "__globals__", {})
    called = (names.get(name) for name in set(re.findall(r"\b([A-Za-z_]\w*)\(", source)))
    return any(isinstance(callee, types.FunctionType) and callee.__module__.startswith("patchbay") and reads_body(callee, depth + 1, seen) for callee in called)


def test_every_operation_that_reads_a_body_declares_it(make_app):
    app = make_app()
    document = build_document(app)
    missing, listed_but_declared = [], []
    for method, path, handler in route_paths(app):
        operation = document["paths"][path][method.lower()]
        declared = "requestBody" in operation
        bodies = getattr(handler, "patchbay_body", {})
        if method == "GET" and bodies and not declared:
            continue  # a handler serving GET and POST (the authorization endpoint) reads the body of its POST only
        if (method, path) in UNDECLARED:
            assert reads_body(handler), f"{method} {path} is listed as reading a body but does not"
            (listed_but_declared if declared else []).append((method, path))
        elif reads_body(handler) and not declared:
            missing.append(f"{method} {path}")
    assert not missing, f"operations reading a body without a requestBody in /openapi.json: {missing}"
    assert not listed_but_declared, f"declared now, drop them from UNDECLARED: {listed_but_declared}"


def test_the_scan_tells_readers_from_the_rest(make_app):
    handlers = {(method, path): handler for method, path, handler in route_paths(make_app())}
    assert reads_body(handlers[("POST", "/connect/v1/workspaces/{id}/join-requests/{requestId}/deny")])  # through its helper
    assert reads_body(handlers[("POST", "/api/v1/oidc/token")])  # a form
    assert not reads_body(handlers[("GET", "/connect/v1/flows")])
    assert not reads_body(handlers[("DELETE", "/byoa/{providerType}/credentials")])


def test_registration_and_byoa_credentials_declare_their_models(make_app):
    paths = build_document(make_app())["paths"]
    register = paths["/api/v1/oidc/register"]["post"]["requestBody"]
    byoa = paths["/byoa/{providerType}/credentials"]["post"]["requestBody"]
    assert register["required"] and register["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ClientRegistrationRequest"}
    assert byoa["required"] and byoa["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/SaveByoaCredentialDto"}
