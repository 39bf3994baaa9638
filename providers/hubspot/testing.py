"""Test helpers of the HubSpot pack: a fake of its CRM API on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.testing import LocalServer


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
