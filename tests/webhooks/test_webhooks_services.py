"""The webhooks' services on both databases, without HTTP: the event log (core/webhooks/events_service.py)
and the outbound subscriptions (core/webhooks/subscriptions_service.py) answer rows of the session's
workspace only and refuse with domain errors, which the HTTP layer maps."""

from datetime import timedelta

import pytest

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.jobs.queue import JobQueue
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.secrets import SecretBox
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks import events_service as event_log
from patchbay.core.webhooks import subscriptions_service as service
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent
from patchbay.core.workspaces.service import create_workspace

BOX = SecretBox(["a test key that is long enough"])


async def workspaces(db, *names):
    async with db.transaction() as session:
        return [(await create_workspace(session, name=name))[0].id for name in names]


async def add(db, workspace_id, *rows):
    async with db.transaction(tenant=workspace_id) as session:
        for row in rows:
            row.workspace_id = workspace_id
            session.add(row)
    return [row.id for row in rows]


# ---------------------------------------------------------------------------------------------
# The event log
# ---------------------------------------------------------------------------------------------


async def test_an_unknown_id_is_not_found_as_a_domain_error(db):
    mine, theirs = await workspaces(db, "Mine", "Theirs")
    (their_event,) = await add(db, theirs, WebhookEvent(provider="meta", status="PROCESSED"))
    (their_delivery,) = await add(db, theirs, WebhookDelivery(event_id=their_event, subscription_id="s"))
    async with db.session(tenant=mine) as session:
        for event_id in (their_event, "nope"):
            with pytest.raises(NotFound, match="^Event not found$"):
                await event_log.get_event(session, event_id)
        for delivery_id in (their_delivery, "nope"):
            with pytest.raises(NotFound, match="^Delivery not found$"):
                await event_log.get_delivery(session, delivery_id)


@pytest.mark.both_databases
async def test_event_pages_are_filtered_counted_and_newest_first(db):
    (ws,) = await workspaces(db, "One")
    now = utcnow()
    old, middle, new = await add(
        db,
        ws,
        WebhookEvent(provider="meta", event_type="leadgen", status="PROCESSED", created_at=now - timedelta(minutes=2)),
        WebhookEvent(provider="slack", event_type="message", status="FAILED", created_at=now - timedelta(minutes=1)),
        WebhookEvent(provider="meta", event_type="leadgen", status="FAILED", created_at=now),
    )
    async with db.session(tenant=ws) as session:
        rows, total = await event_log.event_page(session, provider=None, event_type=None, status=None, page=1, limit=2)
        assert ([row.id for row in rows], total) == ([new, middle], 3)
        rows, total = await event_log.event_page(session, provider=None, event_type=None, status=None, page=2, limit=2)
        assert ([row.id for row in rows], total) == ([old], 3)
        rows, total = await event_log.event_page(session, provider="meta", event_type="leadgen", status="FAILED", page=1, limit=20)
        assert ([row.id for row in rows], total) == ([new], 1)
        rows, total = await event_log.event_page(session, provider="", event_type=None, status="PROCESSED", page=1, limit=20)
        assert ([row.id for row in rows], total) == ([old], 1)


async def test_deliveries_come_with_their_attempts_in_order(db):
    (ws,) = await workspaces(db, "One")
    now = utcnow()
    (event,) = await add(db, ws, WebhookEvent(provider="meta", status="PROCESSED"))
    first, second = await add(
        db,
        ws,
        WebhookDelivery(event_id=event, subscription_id="s1", status="failed", created_at=now - timedelta(minutes=1)),
        WebhookDelivery(event_id=event, subscription_id="s2", status="succeeded", created_at=now),
    )
    await add(db, ws, WebhookAttempt(delivery_id=first, number=2, status_code=500), WebhookAttempt(delivery_id=first, number=1, status_code=502))
    async with db.session(tenant=ws) as session:
        assert [d.id for d in await event_log.deliveries_of(session, event)] == [first, second]
        rows, total = await event_log.delivery_page(session, event_id=event, subscription_id=None, status=None, page=1, limit=20)
        assert ([d.id for d in rows], total) == ([second, first], 2)
        rows, total = await event_log.delivery_page(session, event_id=None, subscription_id="s1", status="failed", page=1, limit=20)
        assert ([d.id for d in rows], total) == ([first], 1)
        attempts = await event_log.attempts_by_delivery(session, [first, second])
        assert {key: [a.number for a in value] for key, value in attempts.items()} == {first: [1, 2], second: []}
        assert await event_log.attempts_by_delivery(session, []) == {}


async def test_redelivery_refuses_with_domain_errors(db):
    (ws,) = await workspaces(db, "One")
    received, processed = await add(db, ws, WebhookEvent(provider="meta", status="RECEIVED"), WebhookEvent(provider="meta", status="PROCESSED"))
    jobs = JobQueue(db)  # no delivery is created, so nothing is queued
    async with db.transaction(tenant=ws) as session:
        with pytest.raises(NotFound, match="^Event not found$"):
            await event_log.redeliver(jobs, session, "nope", subscription_id=None)
        with pytest.raises(Conflict, match="^The event has not been processed yet$"):
            await event_log.redeliver(jobs, session, received, subscription_id=None)
        with pytest.raises(NotFound, match="^Subscription not found or not active$"):
            await event_log.redeliver(jobs, session, processed, subscription_id="nope")
        event, deliveries = await event_log.redeliver(jobs, session, processed, subscription_id=None)
        assert (event.id, deliveries) == (processed, [])


# ---------------------------------------------------------------------------------------------
# Outbound subscriptions
# ---------------------------------------------------------------------------------------------


async def subscribe(db, workspace_id, provider="meta", secret=None):
    async with db.transaction(tenant=workspace_id) as session:
        subscription = await service.create_subscription(
            session, BOX, provider=provider, url="https://example.com/hook", events=["*"], long_tail=False, secret=secret
        )
    return subscription


def provider(webhooks: bool) -> Provider:
    return Provider(name="quiet", display_name="Quiet", category="crm", auth_mode="api_key", api_base_url="https://api.example.com", webhooks=webhooks)


def test_a_provider_without_webhooks_takes_only_connection_events():
    assert service.check_events(provider(False), ["connection.created", "connection.removed"]) == ["connection.created", "connection.removed"]
    assert service.check_events(provider(True), ["*"]) == ["*"]
    for events in (["*"], ["connection.created", "lead.created"]):
        with pytest.raises(Invalid, match="^Validation failed: quiet sends no webhooks; .*connection.created"):
            service.check_events(provider(False), events)


async def test_a_subscription_is_found_only_in_its_workspace_under_its_provider(db):
    mine, theirs = await workspaces(db, "Mine", "Theirs")
    own, other = await subscribe(db, mine), await subscribe(db, theirs)
    async with db.transaction(tenant=mine) as session:
        assert (await service.get_subscription(session, "meta", own.id)).id == own.id
        for provider_name, subscription_id in (("slack", own.id), ("meta", other.id), ("meta", "nope")):
            with pytest.raises(NotFound, match="^Subscription not found$"):
                await service.get_subscription(session, provider_name, subscription_id)
        with pytest.raises(NotFound):
            await service.delete_subscription(session, "meta", other.id)
        await service.delete_subscription(session, "meta", own.id)
    async with db.session(tenant=theirs) as session:
        assert [s.id for s in await service.list_subscriptions(session, "meta", include_disabled=True)] == [other.id]


async def test_disabling_and_reenabling(db):
    (ws,) = await workspaces(db, "One")
    first, second = await subscribe(db, ws), await subscribe(db, ws)
    async with db.transaction(tenant=ws) as session:
        disabled = await service.update_subscription(session, "meta", first.id, is_active=False, long_tail=True)
        assert (disabled.is_active, disabled.disabled_reason, disabled.long_tail) == (False, "disabled by the workspace", True)
        assert disabled.disabled_at is not None
        disabled.failing_since = utcnow()
    async with db.session(tenant=ws) as session:
        assert [s.id for s in await service.list_subscriptions(session, "meta", include_disabled=False)] == [second.id]
        assert [s.id for s in await service.list_subscriptions(session, "meta", include_disabled=True)] == [first.id, second.id]
    async with db.transaction(tenant=ws) as session:
        enabled = await service.update_subscription(session, "meta", first.id, is_active=True, url="https://example.com/new", events=["leadgen"])
        assert (enabled.is_active, enabled.disabled_at, enabled.disabled_reason, enabled.failing_since) == (True, None, None, None)
        assert (enabled.url, enabled.events, enabled.long_tail) == ("https://example.com/new", ["leadgen"], True)


async def test_rotating_keeps_the_old_secret_for_the_overlap_only(db):
    (ws,) = await workspaces(db, "One")
    unsigned = await subscribe(db, ws)
    signed = await subscribe(db, ws, secret="first-secret")
    assert BOX.decrypt(signed.secret) == "first-secret" and unsigned.secret is None
    async with db.transaction(tenant=ws) as session:
        rotated = await service.rotate_secret(session, BOX, "meta", unsigned.id, new_secret="second-secret", overlap_seconds=3600)
        assert (BOX.decrypt(rotated.secret), rotated.previous_secret) == ("second-secret", None)  # nothing signed before
        rotated = await service.rotate_secret(session, BOX, "meta", signed.id, new_secret="second-secret", overlap_seconds=3600)
        assert (BOX.decrypt(rotated.secret), BOX.decrypt(rotated.previous_secret)) == ("second-secret", "first-secret")
        assert abs(rotated.previous_secret_expires_at - (utcnow() + timedelta(hours=1))) < timedelta(minutes=1)
        rotated = await service.rotate_secret(session, BOX, "meta", signed.id, new_secret="third-secret", overlap_seconds=0)
        assert (BOX.decrypt(rotated.secret), rotated.previous_secret, rotated.previous_secret_expires_at) == ("third-secret", None, None)
