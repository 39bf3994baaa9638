"""Forwarding events to subscriptions (spec 6.3, contract section 7).

The first attempts of the deliveries that one processing pass creates are made at once by that pass
(:func:`forward_at_once`), backed by one delayed job, ``webhooks.deliver_batch`` ``{delivery_ids}``
(see :func:`deliver_batch_job`), that makes them if the process dies first; every other attempt
is a job ``webhooks.deliver`` ``{delivery_id, attempt}``. It POSTs the event, then in
one transaction logs the attempt, updates the delivery and, when another try is due, queues the next
attempt's job with its delay: the attempt log and the schedule never disagree. A job that finds its
attempt already logged does nothing, so a re-run after a crash does not log twice (the POST itself
may repeat: receivers dedupe with ``X-Connect-Delivery`` / ``webhook-id``, stable across retries).

The body is serialized once, when the delivery is created, and stored with it (``body``): every
attempt sends (and signs) those bytes, however the event's payload comes back from the database
(PostgreSQL's JSONB does not keep the order of keys).

Schedule: after a failed attempt, ``max_retries`` (3) retries wait ``retry_base_ms`` growing four-fold
up to ``retry_cap_ms`` (1 s, 4 s, 15 s); a 429's ``Retry-After`` replaces the wait; a 410 stops and
disables the subscription. A subscription with ``long_tail`` then keeps trying on
``long_tail_schedule`` (minutes to hours). A subscription failing for ``disable_after_minutes`` is
disabled when a delivery runs out of tries, with a warning in the log and the reason on the
subscription.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from datetime import timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import attrs
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.jobs.queue import JobContext, JobQueue
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.security.secrets import DecryptionError
from patchbay.core.services import Services
from patchbay.core.settings import WebhooksSettings
from patchbay.core.storage.sql import one_of
from patchbay.core.timeutil import iso, new_id, utcnow
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.core.webhooks.signing import signature_headers

log = logging.getLogger(__name__)

DELIVER_JOB = "webhooks.deliver"
DELIVER_BATCH_JOB = "webhooks.deliver_batch"
#: first attempts of one batch job in flight at once
BATCH_CONCURRENCY = 64
EXCERPT_BYTES = 1024
_DELIVERIES = WebhookDelivery.__table__
_SUBSCRIPTIONS = WebhookSubscription.__table__


def matches(subscription: WebhookSubscription, event_type: str | None) -> bool:
    events = subscription.events or ["*"]
    return "*" in events or (event_type is not None and event_type in events)


async def create_deliveries(
    jobs: JobQueue, session: AsyncSession, event: WebhookEvent, *, subscription_id: str | None = None, manual: bool = False, body: bytes | None = None
) -> list[WebhookDelivery]:
    """Queue the forwarding of ``event`` to its workspace's active, matching subscriptions (or to
    one of them), each sending ``body`` (by default the event serialized now, once for all)."""
    statement = select(WebhookSubscription).where(
        WebhookSubscription.workspace_id == event.workspace_id,
        WebhookSubscription.provider == event.provider,
        WebhookSubscription.is_active.is_(True),
    )
    if subscription_id is not None:
        statement = statement.where(WebhookSubscription.id == subscription_id)
    created = []
    for subscription in (await session.scalars(statement)).all():
        if subscription_id is None and not matches(subscription, event.event_type):
            continue
        if body is None:
            body = forward_body(event)
        delivery = WebhookDelivery(
            workspace_id=event.workspace_id, event_id=event.id, subscription_id=subscription.id, manual=manual, next_attempt_at=utcnow(), body=body
        )
        session.add(delivery)
        created.append(delivery)
    if created:
        await session.flush()
        for delivery in created:
            jobs.enqueue(session, DELIVER_JOB, {"delivery_id": delivery.id, "attempt": 1}, workspace_id=event.workspace_id)
    return created


def forward_body(event: Any) -> bytes:
    """The forwarded JSON: ``{id, event, provider, workspaceId, timestamp, data}``; ``event`` is a
    :class:`WebhookEvent` or an event of a processing pass with the same attributes."""
    document = {
        "id": event.id,
        "event": event.event_type,
        "provider": event.provider,
        "workspaceId": event.workspace_id,
        "timestamp": iso(event.created_at),
        "data": event.payload or {},
    }
    return _encode(document)


def _encode(document: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON; a text holding a lone surrogate (a provider's ``"\\ud800"``), which UTF-8
    cannot carry, keeps it escaped (the whole document in ASCII) instead of failing the pass."""
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(document, separators=(",", ":")).encode()


async def erase_lead_from_bodies(session: AsyncSession, event_ids: list[str]) -> None:
    """Remove the lead copied into the stored bytes of the deliveries of ``event_ids`` (a data
    deletion request); the rest of each body keeps its keys' order and its form."""
    statement = select(_DELIVERIES.c.id, _DELIVERIES.c.body).where(one_of(_DELIVERIES.c.event_id, event_ids), _DELIVERIES.c.body.is_not(None))
    for delivery_id, body in (await session.execute(statement)).all():
        document = json.loads(body)
        if isinstance(document.get("data"), dict) and document["data"].pop("lead", None) is not None:
            await session.execute(update(_DELIVERIES).where(_DELIVERIES.c.id == delivery_id).values(body=_encode(document)))


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment is None:
        return None
    return max(0.0, (moment - utcnow()).total_seconds()) if moment.tzinfo else None


def next_delay(settings: WebhooksSettings, *, long_tail: bool, attempt: int, status: int | None, retry_after: str | None) -> float | None:
    """Seconds to wait before attempt ``attempt + 1``, or None when no try is left."""
    if attempt <= settings.max_retries:
        delay = min(settings.retry_cap_ms, settings.retry_base_ms * 4 ** (attempt - 1)) / 1000
    elif long_tail and attempt - settings.max_retries - 1 < len(settings.long_tail_schedule):
        delay = float(settings.long_tail_schedule[attempt - settings.max_retries - 1])
    else:
        return None
    if status == 429:
        asked = parse_retry_after(retry_after)
        if asked is not None:
            delay = min(max(delay, asked), float(settings.retry_after_cap_seconds))
    return delay


def subscription_secrets(services: Services, subscription: WebhookSubscription) -> list[str]:
    """The secrets to sign with: the current one, then the rotated-out one during its overlap."""
    if not subscription.secret:
        return []
    secrets = [services.secrets.decrypt(subscription.secret)]
    expires = subscription.previous_secret_expires_at
    if subscription.previous_secret and expires is not None and expires > utcnow():
        secrets.append(services.secrets.decrypt(subscription.previous_secret))
    return secrets


@attrs.define
class _Outcome:
    """What one HTTP attempt came to."""

    status_code: int | None = None
    excerpt: str | None = None
    error: str | None = None
    retry_after: str | None = None
    unsafe: bool = False
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def gone(self) -> bool:
        return self.status_code == 410


def _closing_reason(subscription: WebhookSubscription | None, event: WebhookEvent | None) -> str | None:
    if subscription is None:
        return "the subscription was deleted"
    if not subscription.is_active:
        return "the subscription is disabled"
    return "the event is gone" if event is None else None


def _signing_secrets(services: Services, subscription: WebhookSubscription) -> list[str] | str:
    """The subscription's secrets to sign with, or why its deliveries must close untried."""
    try:
        return subscription_secrets(services, subscription)
    except DecryptionError:
        return "the callback secret cannot be decrypted with the configured keys"


def _body_of(delivery: Any, event: Any) -> bytes:
    """The bytes of ``delivery``: those stored with it, or for a delivery queued by an earlier
    release (none stored), ``event`` as read from the database, the same on each attempt."""
    return delivery.body if delivery.body is not None else forward_body(event)


async def _attempt(services: Services, subscription: WebhookSubscription, event: Any, secrets: list[str] | str, body: bytes) -> _Outcome | str:
    """POST ``body``, the bytes of a delivery of ``event``, to ``subscription``, signed with
    ``secrets`` (:func:`_signing_secrets`): the outcome, or why the delivery must close untried."""
    if isinstance(secrets, str):
        return secrets
    settings = services.settings.webhooks
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "patchbay-webhooks/1",
        "X-Connect-Event": event.event_type or "",
        "X-Connect-Provider": event.provider,
        "X-Connect-Delivery": event.id,
        "webhook-id": event.id,
        "webhook-timestamp": str(timestamp),
        **signature_headers(secrets, event.id, timestamp, body),
    }
    outcome = _Outcome()
    started = time.perf_counter()
    try:
        services.outbound.check(subscription.url)
        timeout = aiohttp.ClientTimeout(total=settings.attempt_timeout_seconds)
        async with services.outbound.session.post(subscription.url, data=body, headers=headers, timeout=timeout, allow_redirects=False) as response:
            outcome.status_code = response.status
            outcome.retry_after = response.headers.get("Retry-After")
            outcome.excerpt = (await response.content.read(EXCERPT_BYTES)).decode("utf-8", "replace")
    except UnsafeTarget as exc:
        outcome.error, outcome.unsafe = f"refused target: {exc}", True
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    outcome.duration_ms = int((time.perf_counter() - started) * 1000)
    return outcome


def _next_delay(services: Services, subscription: WebhookSubscription, attempt: int, outcome: _Outcome) -> float | None:
    if outcome.ok or outcome.gone or outcome.unsafe:
        return None
    return next_delay(
        services.settings.webhooks, long_tail=subscription.long_tail, attempt=attempt, status=outcome.status_code, retry_after=outcome.retry_after
    )


def _delivery_values(outcome: _Outcome, attempt: int, delay: float | None, now) -> dict[str, Any]:
    values: dict[str, Any] = {"attempts": attempt, "last_status_code": outcome.status_code, "last_error": outcome.error, "updated_at": now}
    if outcome.ok:
        values.update(status="succeeded", delivered_at=now, next_attempt_at=None)
    elif outcome.gone:
        values.update(status="gone", next_attempt_at=None)
    elif delay is None:
        values.update(status="failed", next_attempt_at=None)
    else:
        values.update(next_attempt_at=now + timedelta(seconds=delay))
    return values


async def deliver_job(context: JobContext) -> None:
    services = context.services
    delivery_id, attempt = context.payload["delivery_id"], int(context.payload["attempt"])
    async with services.db.session() as session:
        delivery = await session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.status != "pending" or delivery.attempts >= attempt:
            return
        subscription = await session.get(WebhookSubscription, delivery.subscription_id)
        event = await session.get(WebhookEvent, delivery.event_id)
    reason = _closing_reason(subscription, event)
    outcome = reason or await _attempt(services, subscription, event, _signing_secrets(services, subscription), _body_of(delivery, event))
    if isinstance(outcome, str):
        await _close(services, delivery, outcome)
        return
    delay = _next_delay(services, subscription, attempt, outcome)
    now = utcnow()
    async with services.db.transaction(tenant=delivery.workspace_id) as session:
        session.add(
            WebhookAttempt(
                delivery_id=delivery.id,
                number=attempt,
                status_code=outcome.status_code,
                duration_ms=outcome.duration_ms,
                response_excerpt=outcome.excerpt,
                error=outcome.error,
            )
        )
        values = _delivery_values(outcome, attempt, delay, now)
        await session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery.id).values(**values).execution_options(synchronize_session=False))
        subscription = await session.get(WebhookSubscription, subscription.id)
        if subscription is not None:
            _track_health(services.settings.webhooks, subscription, ok=outcome.ok, gone=outcome.gone, exhausted=not outcome.ok and delay is None)
        if delay is not None:
            services.jobs.enqueue(session, DELIVER_JOB, {"delivery_id": delivery.id, "attempt": attempt + 1}, delay=delay, workspace_id=delivery.workspace_id)


@attrs.frozen
class NewDelivery:
    """A delivery a processing pass has just created, as its first attempt needs it."""

    id: str
    workspace_id: str
    subscription_id: str
    body: bytes


def safety_delay(settings: WebhooksSettings) -> float:
    """How long after its processing pass the ``deliver_batch`` job backing first attempts made at
    once runs (if the process died before logging them): twice an attempt's timeout."""
    return 2.0 * settings.attempt_timeout_seconds


async def _first_attempts(services: Services, pending: list[tuple[Any, WebhookSubscription | None, Any]]) -> list[_Outcome | str]:
    """POST each ``(delivery, subscription, event)`` at most ``BATCH_CONCURRENCY`` at a time: each
    one's outcome, or why it closes untried. A subscription's secrets are decrypted once for all."""
    slots = asyncio.Semaphore(BATCH_CONCURRENCY)
    secrets: dict[str, list[str] | str] = {}

    async def attempt(delivery: Any, subscription: WebhookSubscription | None, event: Any) -> _Outcome | str:
        reason = _closing_reason(subscription, event)
        if reason:
            return reason
        if subscription.id not in secrets:
            secrets[subscription.id] = _signing_secrets(services, subscription)
        async with slots:
            return await _attempt(services, subscription, event, secrets[subscription.id], _body_of(delivery, event))

    return await asyncio.gather(*(attempt(*item) for item in pending))


async def _finish_first_attempts(services: Services, deliveries: list[Any], outcomes: list[_Outcome | str], finish_jobs: list[str] = ()) -> None:
    tried = [(delivery, outcome) for delivery, outcome in zip(deliveries, outcomes, strict=True) if not isinstance(outcome, str)]
    for delivery, outcome in zip(deliveries, outcomes, strict=True):
        if isinstance(outcome, str):
            await _close(services, delivery, outcome)
    if tried or finish_jobs:
        await _log_first_attempts(services, tried, finish_jobs)


async def forward_at_once(services: Services, pending: list[tuple[NewDelivery, WebhookSubscription, Any]], safety_jobs: list[str]) -> None:
    """The first attempts of deliveries a processing pass has just committed, made at once (no job
    hop, nothing read back): POSTed, then logged like a ``deliver_batch`` job's in a transaction that
    also finishes ``safety_jobs``, the delayed ``deliver_batch`` jobs queued with the deliveries. If
    the process dies (or logging fails) first, those jobs make the attempts."""
    outcomes = await _first_attempts(services, pending)
    try:
        await _finish_first_attempts(services, [delivery for delivery, _, _ in pending], outcomes, safety_jobs)
    except Exception:
        log.warning("logging %d first delivery attempts failed; their deliver_batch jobs will try again", len(pending), exc_info=True)


async def deliver_batch_job(context: JobContext) -> None:
    """The first attempts of many deliveries (``{delivery_ids}``): read in three queries, POSTed
    concurrently, then logged in one transaction that claims each delivery's first attempt (a
    delivery whose first attempt is logged already is left alone, so a re-run logs nothing twice)
    and queues the second attempts, as ``webhooks.deliver`` jobs, of those that failed."""
    services = context.services
    ids = list(context.payload["delivery_ids"])
    async with services.db.session() as session:
        statement = select(WebhookDelivery).where(one_of(WebhookDelivery.id, ids), WebhookDelivery.status == "pending", WebhookDelivery.attempts < 1)
        deliveries = list((await session.scalars(statement)).all())
        if not deliveries:
            return
        subscription_ids = {d.subscription_id for d in deliveries}
        subscriptions = {s.id: s for s in (await session.scalars(select(WebhookSubscription).where(one_of(WebhookSubscription.id, subscription_ids)))).all()}
        event_ids = {d.event_id for d in deliveries}
        events = {e.id: e for e in (await session.scalars(select(WebhookEvent).where(one_of(WebhookEvent.id, event_ids)))).all()}
    pending = [(delivery, subscriptions.get(delivery.subscription_id), events.get(delivery.event_id)) for delivery in deliveries]
    await _finish_first_attempts(services, deliveries, await _first_attempts(services, pending))


async def _log_first_attempts(services: Services, tried: list[tuple[Any, _Outcome]], finish_jobs: list[str] = ()) -> None:
    """In one transaction: finish ``finish_jobs``; claim and record each delivery's first attempt
    (one UPDATE per distinct outcome, claiming only deliveries whose first attempt is not logged
    yet), log the attempts, clear the failing mark of the subscriptions that answered, and track
    the health and queue the second attempts of those that did not."""
    now = utcnow()
    async with services.db.transaction() as session:
        await services.jobs.finish_queued(session, list(finish_jobs))
        failing = {delivery.subscription_id for delivery, outcome in tried if not outcome.ok}
        subscriptions = {}
        if failing:
            subscriptions = {s.id: s for s in (await session.scalars(select(WebhookSubscription).where(one_of(WebhookSubscription.id, failing)))).all()}
        delays: dict[str, float | None] = {}
        by_values: dict[tuple, list[str]] = defaultdict(list)
        for delivery, outcome in tried:
            subscription = subscriptions.get(delivery.subscription_id)
            delays[delivery.id] = _next_delay(services, subscription, 1, outcome) if subscription is not None else None
            by_values[tuple(_delivery_values(outcome, 1, delays[delivery.id], now).items())].append(delivery.id)
        claimed: set[str] = set()
        for values, ids in by_values.items():
            statement = (
                update(_DELIVERIES)
                .where(one_of(_DELIVERIES.c.id, ids), _DELIVERIES.c.status == "pending", _DELIVERIES.c.attempts < 1)
                .values(dict(values))
                .returning(_DELIVERIES.c.id)
            )
            claimed.update((await session.execute(statement)).scalars())
        mine = [(delivery, outcome) for delivery, outcome in tried if delivery.id in claimed]
        if not mine:
            return
        attempts = [
            {
                "id": new_id(),
                "workspace_id": delivery.workspace_id,
                "delivery_id": delivery.id,
                "number": 1,
                "status_code": outcome.status_code,
                "duration_ms": outcome.duration_ms,
                "response_excerpt": outcome.excerpt,
                "error": outcome.error,
                "created_at": now,
                "updated_at": now,
            }
            for delivery, outcome in mine
        ]
        await session.execute(WebhookAttempt.__table__.insert(), attempts)
        answered = {delivery.subscription_id for delivery, outcome in mine if outcome.ok}
        if answered:
            await session.execute(
                update(_SUBSCRIPTIONS).where(one_of(_SUBSCRIPTIONS.c.id, answered), _SUBSCRIPTIONS.c.failing_since.is_not(None)).values(failing_since=None)
            )
        for delivery, outcome in mine:
            subscription, delay = subscriptions.get(delivery.subscription_id), delays[delivery.id]
            if outcome.ok:
                continue
            if subscription is not None:
                _track_health(services.settings.webhooks, subscription, ok=False, gone=outcome.gone, exhausted=delay is None)
            if delay is not None:
                services.jobs.enqueue(session, DELIVER_JOB, {"delivery_id": delivery.id, "attempt": 2}, delay=delay, workspace_id=delivery.workspace_id)


def _track_health(settings: WebhooksSettings, subscription: WebhookSubscription, *, ok: bool, gone: bool, exhausted: bool) -> None:
    now = utcnow()
    if ok:
        subscription.failing_since = None
        return
    if subscription.failing_since is None:
        subscription.failing_since = now
    reason = None
    if gone:
        reason = "the endpoint answered 410 Gone"
    elif exhausted and now - subscription.failing_since >= timedelta(minutes=settings.disable_after_minutes):
        reason = f"every delivery has failed since {iso(subscription.failing_since)}"
    if reason and subscription.is_active:
        subscription.is_active = False
        subscription.disabled_at = now
        subscription.disabled_reason = reason
        log.warning("ALERT: webhook subscription %s (workspace %s, %s) disabled: %s", subscription.id, subscription.workspace_id, subscription.url, reason)
        from patchbay.core.alerts.operator_events import webhook_subscription_disabled

        webhook_subscription_disabled(subscription, reason)


async def _close(services: Services, delivery: WebhookDelivery, reason: str) -> None:
    async with services.db.transaction(tenant=delivery.workspace_id) as session:
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery.id, WebhookDelivery.status == "pending")
            .values(status="failed", last_error=reason, next_attempt_at=None, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
