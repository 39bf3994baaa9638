"""Outbound webhooks in the console, the way Svix's portal shows them: the subscriptions (endpoints)
with their event types; one endpoint's recent deliveries with every attempt; send a test event;
rotate the signing secret (the new one shown once); enable and disable. Every write calls the
webhooks service the API calls."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.console.form_models import CsrfOnlyForm
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, render, see_other
from patchbay.core.console.service import PREFIX
from patchbay.core.http.responses import HTML, returns
from patchbay.core.webhooks import events_service, subscriptions_service
from patchbay.core.webhooks.signing import generate_secret

routes = web.RouteTableDef()
NAV = NavItem("Webhooks", "webhooks", NAV_ORDER["Webhooks"])
BASE = PREFIX + "/w/{workspace_id}/webhooks"
RECENT = 25  # deliveries shown on an endpoint's page


@routes.get(BASE)
@page()
async def webhooks_page(request: web.Request, view: View) -> web.Response:
    """The workspace's subscriptions (endpoints) to every provider's events, disabled ones too."""
    rows = await subscriptions_service.every_subscription(view.services, view.workspace_id)
    return render(request, "console/webhooks.html", {"subscriptions": rows}, view=view, current="webhooks")


async def _endpoint(request: web.Request, view: View, *, secret: str | None = None, sent: str | None = None) -> web.Response:
    subscription = await subscriptions_service.subscription_by_id(view.services, view.workspace_id, request.match_info["subscription_id"])
    deliveries, total, attempts = await events_service.deliveries_with_attempts(
        view.services, view.workspace_id, event_id=None, subscription_id=subscription.id, status=None, page=1, limit=RECENT
    )
    context = {"s": subscription, "deliveries": deliveries, "total": total, "attempts": attempts, "secret": secret, "sent": sent}
    return render(request, "console/webhook.html", context, view=view, current="webhooks")


@routes.get(BASE + "/{subscription_id}")
@page()
async def endpoint_page(request: web.Request, view: View) -> web.Response:
    """An endpoint: its URL, event types, secret status, and its recent deliveries with their attempts."""
    sent = request.query.get("sent", "")[:64] or None  # the test event just queued (shown escaped)
    return await _endpoint(request, view, sent=sent)


@routes.post(BASE + "/{subscription_id}/test")
@action(form=CsrfOnlyForm, description="Queued: back to the endpoint, which lists the test delivery")
async def send_test(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Send a test event (``webhook.test``) to the endpoint, signed and retried as any delivery."""
    event, _delivery = await events_service.send_test_event(view.services, view.workspace_id, request.match_info["subscription_id"])
    raise see_other(request, view.url(f"webhooks/{request.match_info['subscription_id']}?sent={event.id}"))


@routes.post(BASE + "/{subscription_id}/rotate-secret")
@returns(HTML, description="Rotated: the endpoint's page with the new secret, shown this once")
@action(form=CsrfOnlyForm, description=None)
async def rotate_secret(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.Response:
    """Sign with a new secret from now on (the old one keeps signing beside it for the deployment's
    overlap); the page shows the new secret this once."""
    subscription = await subscriptions_service.subscription_by_id(view.services, view.workspace_id, request.match_info["subscription_id"])
    secret = generate_secret()
    await subscriptions_service.rotate(view.services, view.workspace_id, subscription.provider, subscription.id, new_secret=secret, overlap_seconds=None)
    return await _endpoint(request, view, secret=secret)


async def _set_active(request: web.Request, view: View, active: bool) -> web.StreamResponse:
    subscription = await subscriptions_service.subscription_by_id(view.services, view.workspace_id, request.match_info["subscription_id"])
    await subscriptions_service.change(view.services, view.workspace_id, subscription.provider, subscription.id, is_active=active)
    raise see_other(request, view.url(f"webhooks/{subscription.id}"))


@routes.post(BASE + "/{subscription_id}/enable")
@action(form=CsrfOnlyForm)
async def enable(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Enable the endpoint again (forgets why it was disabled)."""
    return await _set_active(request, view, True)


@routes.post(BASE + "/{subscription_id}/disable")
@action(form=CsrfOnlyForm)
async def disable(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Disable the endpoint: nothing more is sent to it."""
    return await _set_active(request, view, False)
