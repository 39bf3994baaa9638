"""Test helpers of the Meta pack: signed webhook payloads and a fake Graph API on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from aiohttp import web

from patchbay.testing import LocalServer


def meta_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def leadgen_payload(page_id: str, leadgen_id: str, *, form_id: str = "form-1", extra_changes: list[dict] | None = None) -> dict[str, Any]:
    change = {"field": "leadgen", "value": {"leadgen_id": leadgen_id, "page_id": page_id, "form_id": form_id, "created_time": 1_700_000_000}}
    return {"object": "page", "entry": [{"id": page_id, "time": 1_700_000_000, "changes": [change, *(extra_changes or [])]}]}


def page_event_payload(page_id: str, field: str = "feed", value: dict | None = None) -> dict[str, Any]:
    return {"object": "page", "entry": [{"id": page_id, "time": 1_700_000_000, "changes": [{"field": field, "value": {"page_id": page_id, **(value or {})}}]}]}


class FakeGraph(LocalServer):
    """A fake of the Graph API's lead endpoints: ``leads`` by id and by ``?ids=`` (at most 50, all
    or nothing), forms per page, leads per form served ``page_size`` at a time with
    ``paging.cursors.after``; records every request."""

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

    def add_lead(
        self, lead_id: str, *, email: str, name: str = "Ada Lovelace", phone: str = "+44 20 7946 0958", form_id: str = "form-1", extra: dict | None = None
    ) -> None:
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
        if not parts and "ids" in request.query:
            ids = request.query["ids"].split(",")
            if len(ids) > 50 or not all(i in self.leads for i in ids):  # as the Graph API: all or nothing
                return web.json_response({"error": {"message": "Some of the aliases you requested do not exist", "code": 100}}, status=404)
            return web.json_response({i: self.leads[i] for i in ids})
        return web.json_response({"error": {"message": "not found"}}, status=404)
