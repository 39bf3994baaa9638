"""Compliance routes (spec 4.1): the privacy policy page and data deletion (a provider's data
deletion callback, a signed-in user's own request, and the status by confirmation code)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.compliance import service
from patchbay.core.compliance.api_models import DeletionInformation, DeletionRequested, DeletionStatus
from patchbay.core.http.bodies import parse_json, read_form
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import query
from patchbay.core.http.responses import HTML, REDIRECT, reply, returns
from patchbay.core.security.auth import authenticate, refused
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()

DEFAULT_POLICY = """{name} stores the data needed to connect your workspace to the services you choose: \
your account details, the credentials of your connections (encrypted), and the records, leads and \
events those services send. It is used only to provide the service and is never sold.

You can ask for your data to be deleted at any time: sign in and send a deletion request, or remove \
the app from your Facebook settings. You receive a confirmation code to follow the deletion."""


@routes.get("/compliance/privacy-policy")
@returns(HTML, description="The policy's page, from [compliance] privacy_policy_text")
@returns(REDIRECT, status=302, description="To [compliance] privacy_policy_url, when it is set")
async def privacy_policy(request: web.Request) -> web.Response:
    """The privacy policy: a redirect to ``[compliance] privacy_policy_url`` or a page of
    ``privacy_policy_text``."""
    settings = request.app[SERVICES].settings
    if settings.compliance.privacy_policy_url:
        raise web.HTTPFound(settings.compliance.privacy_policy_url)
    name = settings.branding.name
    text = settings.compliance.privacy_policy_text or DEFAULT_POLICY.format(name=name)
    paragraphs = "".join(f"<p>{html.escape(part.strip())}</p>" for part in text.split("\n\n") if part.strip())
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Privacy policy · {html.escape(name)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        f'<body style="font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; '
        f'background: {html.escape(settings.branding.background_color)}">'
        f'<h1 style="color: {html.escape(settings.branding.primary_color)}">Privacy policy</h1>{paragraphs}</body></html>'
    )
    return web.Response(text=page, content_type="text/html")


@routes.get("/compliance/data-deletion")
@returns(DeletionInformation)
async def deletion_information(request: web.Request) -> web.Response:
    """How to request the deletion of one's data, with the provider callbacks installed packs read."""
    base = request.app[SERVICES].settings.public_base_url
    callbacks = [
        {"source": source, "field": callback.field} for source, callback in sorted(request.app[SERVICES].registry.objects("deletion_callbacks").items())
    ]
    return reply(
        request,
        {
            "description": "POST a provider's data deletion callback (one of callbacks, e.g. Meta's signed_request) or send a signed-in user's access token to request the deletion of that user's data; follow it with the confirmation code.",
            "callbackUrl": f"{base}/compliance/data-deletion",
            "statusUrl": f"{base}/compliance/data-deletion/status?code={{confirmation_code}}",
            "callbacks": callbacks,
        },
    )


async def _fields(request: web.Request) -> Mapping[str, Any]:
    """The request's fields: a JSON object's, or the form's."""
    if request.content_type == "application/json":
        raw = await request.read()
        body = parse_json(raw) if raw.strip() else {}
        return body if isinstance(body, dict) else {}
    return await read_form(request)


@routes.post("/compliance/data-deletion")
@returns(DeletionRequested, status=201, description="Requested")
async def request_deletion(request: web.Request) -> web.Response:
    """Handle a deletion request: a provider's data deletion callback (form or JSON; Meta's
    ``signed_request``), or a signed-in user's own; answers ``{url, confirmation_code}`` and deletes
    in the background."""
    settings = request.app[SERVICES].settings
    registry = request.app[SERVICES].registry
    fields = await _fields(request)
    found = service.callback_subject(registry, settings.compliance, fields)
    if found is None:
        principal = await authenticate(request)  # user tokens of first-party clients only (docs/security-identity-trust.md)
        if principal is None and request.headers.get("Authorization"):
            raise await refused(request)  # a token, but not one of a first-party app (or its grant was revoked)
        if principal is None or principal.kind != "access_token" or not principal.subject or principal.subject == principal.client_id:
            raise service.no_requester(registry, fields)
        found = "user", principal.subject
    source, subject = found
    deletion = await service.request_deletion(request.app[SERVICES], source=source, subject=subject)
    code = deletion.confirmation_code
    return reply(request, {"url": f"{settings.public_base_url}/compliance/data-deletion/status?code={code}", "confirmation_code": code}, status=201)


@routes.get("/compliance/data-deletion/status")
@query(code={"type": "string", "minLength": 1})
@returns(DeletionStatus)
async def deletion_status(request: web.Request) -> web.Response:
    """The status of a deletion request by its confirmation code (a page for a browser that asks
    for HTML only)."""
    code = request.query.get("code")
    if not code:
        raise bad_request("Query parameter 'code' is required")
    deletion = await service.deletion_by_code(request.app[SERVICES], code)
    body = {
        "confirmationCode": deletion.confirmation_code,
        "status": deletion.status,
        "requestedAt": iso(deletion.created_at),
        "completedAt": iso(deletion.completed_at),
    }
    accept = request.headers.get("Accept", "")
    if "text/html" in accept and "application/json" not in accept:  # a person following Meta's link
        words = {"pending": "is being processed", "completed": "has been completed", "failed": "could not be completed yet; we are looking into it"}
        text = f"Your data deletion request {html.escape(deletion.confirmation_code)} {words.get(deletion.status, deletion.status)}."
        name = html.escape(request.app[SERVICES].settings.branding.name)
        page = f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Data deletion · {name}</title></head><body style="font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto"><h1>Data deletion</h1><p>{text}</p></body></html>'
        return web.Response(text=page, content_type="text/html")
    return reply(request, body)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
