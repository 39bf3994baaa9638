"""What a working two-node deployment does, checked the same way against containers
(test_container.py) and against local processes started with compose.yaml's settings
(test_deployment_processes.py): ``urls`` names each web process's base URL, ``cli(*args)`` runs
``patchbay ARGS --json`` where the deployment runs and answers the parsed output."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

Cli = Callable[..., Any]

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}
_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def interpolate(value: str, environ: dict[str, str]) -> str:
    """``value`` with Compose's interpolations resolved against ``environ``; a required variable
    that is missing raises ``KeyError`` naming it."""

    def one(match: re.Match) -> str:
        name, op, arg = match["name"], match["op"] or "", match["arg"] or ""
        present = environ.get(name) if op.startswith(":") else (environ[name] if name in environ else None)
        if present not in (None, "") or (present == "" and not op.startswith(":")):
            return present
        if op.endswith("?"):
            raise KeyError(f"{name}: {arg}")
        return arg if op.endswith("-") else ""

    return _INTERPOLATION.sub(one, value)


def request(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    sent = {**(headers or {}), **({"content-type": "application/json"} if data is not None else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=sent, method=method), timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def workspace_key(cli: Cli, name: str) -> dict[str, str]:
    workspace = cli("workspaces", "create", "--name", name)
    return {"x-api-key": cli("api-keys", "create", "--workspace", workspace["id"])["key"]}


def check_one_database_and_secret(urls: dict[str, str], cli: Cli, base_url: str) -> None:
    """Both web processes answer on PostgreSQL, advertise the public base URL, and accept an API
    key made by the CLI beside the first one (one database, one secret key)."""
    for url in urls.values():
        assert request("GET", f"{url}/health") == (200, {"status": "ok", "database": "postgresql"})
        status, root = request("GET", f"{url}/")
        assert status == 200 and root["connectApi"] == f"{base_url}/connect/v1", root
    key = workspace_key(cli, "Two nodes")
    first, second = urls.values()
    status, table = request("POST", f"{first}/connect/v1/tables", {"name": "People", "columns": [{"name": "email", "type": "text"}]}, key)
    assert status == 201, table
    status, tables = request("GET", f"{second}/connect/v1/tables", headers=key)
    assert status == 200 and [item["slug"] for item in tables] == ["people"], tables
    assert request("GET", f"{second}/connect/v1/tables", headers={"x-api-key": "pb_wrong"})[0] == 401


def check_the_worker_runs_jobs(urls: dict[str, str], cli: Cli, timeout: float = 60) -> None:
    """A flow invoked through one web process runs there, in the request; its replay is a job, and
    the web processes run no jobs (``PATCHBAY_WORKERS=0``): the worker is what completes it."""
    key = workspace_key(cli, "Jobs")
    first, second = urls.values()
    status, table = request("POST", f"{first}/connect/v1/tables", {"name": "Seen", "columns": [{"name": "email", "type": "text"}]}, key)
    assert status == 201, table
    steps = [{"id": "store", "type": "table.upsert", "table": "seen", "externalKey": "{{ trigger.email }}", "data": {"email": "{{ trigger.email }}"}}]
    status, flow = request("POST", f"{first}/connect/v1/flows", {"name": "Store", "steps": steps}, key)
    assert status == 201 and flow["problems"] == [], flow
    status, published = request("POST", f"{first}/connect/v1/flows/{flow['id']}/publish", {}, key)
    assert status == 201, published
    status, invoked = request("POST", f"{second}/connect/v1/flows/{flow['id']}/invoke", {"email": "ada@example.com"}, key)
    assert status == 201 and invoked["status"] == "completed", invoked
    executions = f"{first}/connect/v1/flows/{flow['id']}/executions"
    status, replay = request("POST", f"{executions}/{invoked['executionId']}/replay", {}, key)
    assert status in (200, 201) and replay["status"] == "pending", replay
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, execution = request("GET", f"{executions}/{replay['id']}", headers=key)
        if status == 200 and execution["status"] not in ("pending", "running"):
            break
        time.sleep(0.25)
    assert execution["status"] == "completed", execution
    status, rows = request("GET", f"{second}/connect/v1/tables/seen/rows", headers=key)
    assert status == 200 and [row["data"] for row in rows["data"]] == [{"email": "ada@example.com"}], rows
