"""The layers point one way: HTTP modules (routes, pages, the app factory, middleware) call services;
services take ``patchbay.core.services.Services`` (never the web application), raise only domain
errors (``core/errors.py``, mapped to HTTP once in ``core/http/errors.py``) and own their SQL.

Read from the source with ``ast``, so a new module that breaks a rule fails here, naming it."""

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
#: HTTP names a service must not use: the web application, HTTP exceptions and their helpers
HTTP_ERROR_NAMES = {"ApiError", "bad_request", "not_found", "forbidden", "conflict", "unauthorized"}


def _relative(path: Path) -> str:
    return path.relative_to(CORE).as_posix()


def is_http_module(path: Path) -> bool:
    """Route and page modules, the HTTP setup of a feature, middleware and the app factory."""
    relative = _relative(path)
    return (
        relative.startswith("http/")
        or relative in {"app.py", "appkeys.py", "testing.py"}  # testing.py: test helpers that take a test's app
        or path.name in {"pages.py", "feature.py", "http.py", "api_models.py", "form_models.py"}
        or path.name == "routes.py"
        or path.name.startswith("routes_")
    )


#: modules that read a request's credentials or cookies for the routes (like middleware): they may use
#: aiohttp's request and response types, but never hold the web application
REQUEST_READERS = {"accounts/auth.py", "security/auth.py", "identity/session.py"}


def is_route_module(path: Path) -> bool:
    return path.name == "routes.py" or path.name.startswith("routes_") or path.name in {"pages.py", "feature.py"}


MODULES = sorted(path for path in CORE.rglob("*.py") if "migrations" not in path.parts)
SERVICE_MODULES = [path for path in MODULES if not is_http_module(path)]
ROUTE_MODULES = [path for path in MODULES if is_route_module(path)]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """``(module, name)`` for every ``from module import name`` and ``(module, "")`` for ``import module``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.extend((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names)
    return found


def web_uses(path: Path) -> list[str]:
    """Where a module reaches for aiohttp's web layer (the application; for a module that reads no
    request, any import of it)."""
    tree = _tree(path)
    found = []
    if not (path.is_relative_to(CORE) and _relative(path) in REQUEST_READERS):
        found += [
            f"imports {module}.{name}".rstrip(".") for module, name in _imports(tree) if module == "aiohttp.web" or (module == "aiohttp" and name == "web")
        ]
    found += [
        f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree) if isinstance(node, ast.Attribute) and ast.unparse(node) == "web.Application"
    ]
    return found


def http_errors_raised(path: Path) -> list[str]:
    tree = _tree(path)
    found = [f"imports {name} from {module}" for module, name in _imports(tree) if module.endswith("core.http.errors") and name in HTTP_ERROR_NAMES]
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = ast.unparse(target)
            if name.split(".")[-1] in HTTP_ERROR_NAMES or name.startswith("web.HTTP"):
                found.append(f"line {node.lineno}: raise {name}")
    return found


def sql_uses(path: Path) -> list[str]:
    tree = _tree(path)
    found = [f"imports {module or name}" for module, name in _imports(tree) if module.split(".")[0] == "sqlalchemy"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {"session", "transaction"}:
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}()")
    return found


@pytest.mark.parametrize("path", SERVICE_MODULES, ids=_relative)
def test_a_service_module_does_not_touch_the_web_application(path):
    assert web_uses(path) == []


@pytest.mark.parametrize("path", SERVICE_MODULES, ids=_relative)
def test_a_service_module_raises_only_domain_errors(path):
    assert http_errors_raised(path) == []


@pytest.mark.parametrize("path", ROUTE_MODULES, ids=_relative)
def test_a_route_module_has_no_sql(path):
    assert sql_uses(path) == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    """Each rule fails on a module that breaks it (so an empty list above means something)."""
    service = tmp_path / "service.py"
    service.write_text(
        "from aiohttp import web\n"
        "from patchbay.core.http.errors import bad_request\n"
        "def f(app: web.Application):\n"
        "    raise bad_request('no')\n"
        "def g():\n"
        "    raise web.HTTPNotFound()\n"
    )
    assert len(web_uses(service)) == 2
    reader = CORE / "security" / "auth.py"
    assert web_uses(reader) == []  # reads requests: the import is allowed, the application is not
    assert len(http_errors_raised(service)) == 3
    routes = tmp_path / "routes.py"
    routes.write_text("from sqlalchemy import select\nasync def h(db):\n    async with db.session() as s:\n        pass\n")
    assert len(sql_uses(routes)) == 2
