"""The webhooks pages over HTTP: endpoints with their event types, an endpoint's deliveries with
their attempts, a test event that reaches a local receiver signed, secret rotation (the new secret
shown once and signing), enable and disable; another workspace's endpoint answers 404, a viewer's
POSTs and a POST without its CSRF token are refused."""

from __future__ import annotations

import json

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.testing import drain
from patchbay.core.webhooks import subscriptions_service
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.core.webhooks.signing import connect_signature
from tests.console.conftest import console_get, console_post

OLD_SECRET = "customer-callback-secret"


async def subscribe(services, workspace_id: str, url: str) -> WebhookSubscription:
    return await subscriptions_service.subscribe(
        services, workspace_id, provider="facebook", url=url + "/hooks", events=["page.feed"], long_tail=False, secret=OLD_SECRET
    )


async def test_a_test_event_reaches_the_receiver_and_the_secret_rotates(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    subscription = await subscribe(services, manager.workspace_id, receiver.url)
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/webhooks"
    status, page = await console_get(http, base)
    assert status == 200 and receiver.url + "/hooks" in page and "page.feed" in page
    endpoint = f"{base}/{subscription.id}"
    status, _, location = await console_post(http, f"{endpoint}/test", {}, token_from=endpoint)
    assert status == 303 and location.startswith(endpoint + "?sent=")
    await drain(services)
    await receiver.wait_for(1)
    sent = receiver.requests[0]
    assert json.loads(sent["body"])["event"] == "webhook.test"
    assert sent["headers"]["X-Connect-Signature"] == connect_signature(OLD_SECRET, sent["body"])
    status, page = await console_get(http, location)
    assert status == 200 and "Attempts of delivery" in page and ">succeeded<" in page and "queued" in page
    # rotate: the new secret is on the page once, and signs from now on
    status, page, _ = await console_post(http, f"{endpoint}/rotate-secret", {}, token_from=endpoint)
    assert status == 200 and "not shown again" in page
    secret = page.split('id="new-secret">', 1)[1].split("<", 1)[0]
    assert secret.startswith("whsec_") and secret not in (await console_get(http, endpoint))[1]
    await console_post(http, f"{endpoint}/test", {}, token_from=endpoint)
    await drain(services)
    await receiver.wait_for(2)
    second = receiver.requests[1]
    assert second["headers"]["X-Connect-Signature"] == connect_signature(secret, second["body"])
    assert second["headers"]["X-Connect-Signature-Previous"] == connect_signature(OLD_SECRET, second["body"])


async def test_an_endpoint_is_disabled_and_enabled(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    subscription = await subscribe(services, manager.workspace_id, receiver.url)
    http = await sign_in(manager)
    endpoint = f"/console/w/{manager.workspace_id}/webhooks/{subscription.id}"
    assert (await console_post(http, f"{endpoint}/disable", {}, token_from=endpoint))[0] == 303
    async with services.db.session() as db:
        assert (await db.get(WebhookSubscription, subscription.id)).is_active is False
    status, page, _ = await console_post(http, f"{endpoint}/test", {}, token_from=endpoint)
    assert status == 409 and "disabled" in page
    assert (await console_post(http, f"{endpoint}/enable", {}, token_from=endpoint))[0] == 303
    async with services.db.session() as db:
        assert (await db.get(WebhookSubscription, subscription.id)).is_active is True


async def test_another_workspaces_endpoint_answers_404(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    mine = await make_person("manager")
    theirs = await make_person("manager")
    subscription = await subscribe(services, theirs.workspace_id, receiver.url)
    http = await sign_in(mine)
    base = f"/console/w/{mine.workspace_id}/webhooks"
    assert (await console_get(http, f"{base}/{subscription.id}"))[0] == 404
    for action in ("test", "rotate-secret", "disable"):
        assert (await console_post(http, f"{base}/{subscription.id}/{action}", {}, token_from=base))[0] == 404, action
    await drain(services)
    assert receiver.requests == []
    async with services.db.session() as db:
        row = await db.get(WebhookSubscription, subscription.id)
    assert row.is_active and row.previous_secret is None


async def test_a_viewer_reads_but_cannot_write_and_csrf_is_checked(make_person, sign_in, console_server, receiver):
    services = console_server.app[SERVICES]
    viewer = await make_person("viewer")
    manager = await make_person("manager", viewer.workspace_id)
    subscription = await subscribe(services, viewer.workspace_id, receiver.url)
    endpoint = f"/console/w/{viewer.workspace_id}/webhooks/{subscription.id}"
    http = await sign_in(viewer)
    status, page = await console_get(http, endpoint)
    assert status == 200 and "/rotate-secret" not in page
    for action in ("test", "rotate-secret", "disable"):
        assert (await console_post(http, f"{endpoint}/{action}", {}, token_from=endpoint))[0] == 403, action
    http = await sign_in(manager)
    assert (await console_post(http, f"{endpoint}/rotate-secret", {"csrf": "forged"}, token_from=endpoint))[0] == 403
    await drain(services)
    assert receiver.requests == []
    async with services.db.session() as db:
        row = await db.get(WebhookSubscription, subscription.id)
    assert row.is_active and row.previous_secret is None
