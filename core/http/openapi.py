"""``GET /openapi.json``: an OpenAPI 3.1 document of every route, built from the router.

Each operation's summary and description come from its handler's docstring; the permissions a
handler requires (``security.auth.requires``) are listed in ``x-permissions``. A handler without a
docstring is a documentation bug that the test suite reports.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SETTINGS

_OPENAPI = web.AppKey("openapi_document", dict)
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


def route_paths(app: web.Application) -> list[tuple[str, str, Any]]:
    """``(method, path, handler)`` of every route, ``HEAD`` and ``OPTIONS`` aside."""
    found = []
    for route in app.router.routes():
        if route.method in ("HEAD", "OPTIONS", "*"):
            continue
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter") or (info.get("prefix", "") + "/{path}")
        found.append((route.method, _PARAM.sub(r"{\1}", path), route.handler))
    return found


def build_document(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for method, path, handler in route_paths(app):
        doc = inspect.getdoc(handler) or ""
        summary, _, description = doc.partition("\n\n")
        operation: dict[str, Any] = {
            "summary": " ".join(summary.split()),
            "operationId": f"{method.lower()}_{getattr(handler, '__name__', 'handler')}",
            "responses": {"default": {"description": "See the interface specification"}},
        }
        if description:
            operation["description"] = description
        params = _PARAM.findall(path)
        if params:
            operation["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
        if getattr(handler, "patchbay_authenticated", False):
            operation["security"] = [{"apiKey": []}, {"bearer": []}]
            operation["x-permissions"] = list(getattr(handler, "patchbay_permissions", ()))
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "patchbay", "version": "1"},
        "servers": [{"url": app[SETTINGS].public_base_url}],
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            }
        },
        "paths": dict(sorted(paths.items())),
    }


async def openapi_json(request: web.Request) -> web.Response:
    """The OpenAPI 3.1 document of this service."""
    return web.json_response(request.app[_OPENAPI])


async def _build_on_startup(app: web.Application) -> None:
    app[_OPENAPI] = build_document(app)


def setup(app: web.Application) -> None:
    app.router.add_get("/openapi.json", openapi_json)
    app.on_startup.append(_build_on_startup)
