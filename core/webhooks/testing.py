"""Helpers for tests and benchmarks of the webhook pipeline: signed Meta payloads, connections,
a recording receiver and a fake Graph API, all on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB, SECRETS
from patchbay.core.connections.models import Connection
from patchbay.core.timeutil import utcnow


def meta_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def leadgen_payload(page_id: str, leadgen_id: str, *, form_id: str = "form-1", extra_changes: list[dict] | None = None) -> dict[str, Any]:
    change = {"field": "leadgen", "value": {"leadgen_id": leadgen_id, "page_id": page_id, "form_id": form_id, "created_time": 1_700_000_000}}
    return {"object": "page", "entry": [{"id": page_id, "time": 1_700_000_000, "changes": [change, *(extra_changes or [])]}]}


def page_event_payload(page_id: str, field: str = "feed", value: dict | None = None) -> dict[str, Any]:
    return {"object": "page", "entry": [{"id": page_id, "time": 1_700_000_000, "changes": [{"field": field, "value": {"page_id": page_id, **(value or {})}}]}]}


async def add_connection(app: web.Application, workspace_id: str, provider: str, *, meta: dict | None = None, params: dict | None = None,
                         credentials: dict | None = None, status: str = "connected") -> str:  # fmt: skip
    """A connection row as the connections feature stores it (credentials encrypted)."""
    secret = app[SECRETS].encrypt(json.dumps(credentials or {"access_token": "test-token"}))
    async with app[DB].transaction(tenant=workspace_id) as session:
        row = Connection(provider=provider, status=status, credentials=secret, params=params or {}, meta=meta or {}, scopes=[], connected_at=utcnow())
        session.add(row)
    return row.id


class LocalServer:
    """An aiohttp app on 127.0.0.1 and a free port."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> LocalServer:
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


class Receiver(LocalServer):
    """Records every POST (raw body, headers). ``statuses`` answers in turn (the last one repeats);
    ``headers_for(n)`` adds response headers to the n-th answer (from 1)."""

    def __init__(self, statuses: list[int] | None = None, headers_for: Callable[[int], dict[str, str]] | None = None) -> None:
        self.statuses = list(statuses or [200])
        self.headers_for = headers_for or (lambda _n: {})
        self.requests: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append({"body": body, "headers": dict(request.headers), "path": request.path, "at": asyncio.get_running_loop().time()})
        self.arrived.set()
        n = len(self.requests)
        status = self.statuses[min(n, len(self.statuses)) - 1]
        return web.Response(status=status, text=f"answer {n}", headers=self.headers_for(n))

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        async def enough() -> None:
            while len(self.requests) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(enough(), timeout)


class FakeGraph(LocalServer):
    """A fake of the Graph API's lead endpoints: ``leads`` by id, forms per page, leads per form
    served ``page_size`` at a time with ``paging.cursors.after``; records every request."""

    def __init__(self, *, page_size: int = 2) -> None:
        self.leads: dict[str, dict[str, Any]] = {}
        self.forms: dict[str, list[str]] = {}
        self.form_leads: dict[str, list[str]] = {}
        self.page_size = page_size
        self.requests: list[tuple[str, str, dict[str, str], str | None]] = []
        self.fail_next: list[int] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    def add_lead(self, lead_id: str, *, email: str, name: str = "Ada Lovelace", phone: str = "+44 20 7946 0958", form_id: str = "form-1", extra: dict | None = None) -> None:
        fields = [{"name": "email", "values": [email]}, {"name": "full_name", "values": [name]}, {"name": "phone_number", "values": [phone]}]
        fields += [{"name": key, "values": [value]} for key, value in (extra or {}).items()]
        self.leads[lead_id] = {"id": lead_id, "created_time": "2026-11-01T10:00:00+0000", "form_id": form_id, "field_data": fields}
        self.form_leads.setdefault(form_id, []).append(lead_id)

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path, dict(request.query), request.headers.get("Authorization")))
        if self.fail_next:
            return web.json_response({"error": {"message": "boom"}}, status=self.fail_next.pop(0))
        parts = [p for p in request.path.split("/") if p]
        if request.method == "POST" and len(parts) == 2 and parts[1] == "subscribed_apps":
            return web.json_response({"success": True})
        if len(parts) == 2 and parts[1] == "leadgen_forms":
            return web.json_response({"data": [{"id": f} for f in self.forms.get(parts[0], [])]})
        if len(parts) == 2 and parts[1] == "leads":
            ids = self.form_leads.get(parts[0], [])
            start = int(request.query.get("after", "0"))
            chunk = ids[start : start + self.page_size]
            body: dict[str, Any] = {"data": [self.leads[i] for i in chunk]}
            if start + self.page_size < len(ids):
                body["paging"] = {"cursors": {"after": str(start + self.page_size)}, "next": "more"}
            return web.json_response(body)
        if len(parts) == 1 and parts[0] in self.leads:
            return web.json_response(self.leads[parts[0]])
        return web.json_response({"error": {"message": "not found"}}, status=404)


class FakeCrm(LocalServer):
    """A fake CRM API (HubSpot's contact routes and a generic endpoint): records every request;
    ``fail_next`` statuses are answered first; a second contact with a known email gets HubSpot's
    409 with the existing id."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.contacts: dict[str, dict[str, Any]] = {}
        self.fail_next: list[int] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        self.requests.append({"method": request.method, "path": request.path, "json": body, "authorization": request.headers.get("Authorization")})
        if self.fail_next:
            return web.json_response({"message": "unavailable"}, status=self.fail_next.pop(0))
        if request.path == "/crm/v3/objects/contacts" and request.method == "POST":
            email = (body or {}).get("properties", {}).get("email")
            for contact_id, contact in self.contacts.items():
                if email and contact.get("email") == email:
                    return web.json_response({"message": f"Contact already exists. Existing ID: {contact_id}"}, status=409)
            contact_id = str(1000 + len(self.contacts))
            self.contacts[contact_id] = dict((body or {}).get("properties", {}))
            return web.json_response({"id": contact_id}, status=201)
        if request.path.startswith("/crm/v3/objects/contacts/") and request.method == "PATCH":
            contact_id = request.path.rsplit("/", 1)[1]
            self.contacts.setdefault(contact_id, {}).update((body or {}).get("properties", {}))
            return web.json_response({"id": contact_id})
        if request.method == "GET":
            return web.json_response({"results": []})
        return web.json_response({"id": f"generic-{len(self.requests)}"})
