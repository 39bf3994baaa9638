"""Alert subscriptions over HTTP (spec 4.11): ``/connect/v1/alerts``."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import select

from patchbay.core.alerts import operator_events
from patchbay.core.alerts.api_models import AlertDeleted, AlertOut, CreateAlertDto, UpdateAlertDto, read_alert
from patchbay.core.alerts.models import AlertSubscription
from patchbay.core.alerts.service import JOB_KIND, deliver_job
from patchbay.core.appkeys import CRON, DB, JOBS, OUTBOUND, REGISTRY, SETTINGS
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.jobs.cron import CronJob
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def alert_json(subscription: AlertSubscription) -> dict[str, Any]:
    return {
        "id": subscription.id,
        "subscriptionId": subscription.id,
        "channel": subscription.channel,
        "target": subscription.target,
        "eventTypes": list(subscription.event_types or []),
        "isActive": subscription.is_active,
        "createdAt": iso(subscription.created_at),
        "updatedAt": iso(subscription.updated_at),
    }


def _check_target(request: web.Request, channel: str, target: str) -> str:
    target = target.strip()
    if not target:
        raise bad_request("target is required")
    if channel == "email":
        local, _, domain = target.partition("@")
        if not local or "." not in domain:
            raise bad_request("target must be an email address for the email channel")
    else:
        try:
            request.app[OUTBOUND].check(target)
        except UnsafeTarget as error:
            raise bad_request(f"target: {error}") from None
    return target


@routes.get("/connect/v1/alerts")
@returns(list[AlertOut])
@requires("alerts.view")
async def list_alerts(request: web.Request) -> web.Response:
    """List the workspace's alert subscriptions."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].session(tenant=workspace_id) as session:
        rows = (await session.scalars(select(AlertSubscription).order_by(AlertSubscription.created_at))).all()
    return reply(request, [alert_json(row) for row in rows])


@routes.post("/connect/v1/alerts")
@accepts(CreateAlertDto)
@returns(AlertOut, status=201, description="Subscribed")
@requires("alerts.write")
async def create_alert(request: web.Request) -> web.Response:
    """Subscribe a channel target to flow.failed / flow.succeeded and the operator events."""
    dto = await read_alert(request, CreateAlertDto)
    channels = request.app[REGISTRY].objects("alert_channels")
    if dto.channel not in channels:
        raise bad_request(f"channel must be one of {', '.join(sorted(channels)) or '(none installed)'}")
    problem = getattr(channels[dto.channel], "configuration_problem", lambda _settings: None)(request.app[SETTINGS])
    if problem:
        raise bad_request(f"channel {dto.channel} cannot deliver here: {problem}")
    target = _check_target(request, dto.channel, dto.target)
    event_types = list(dict.fromkeys(dto.eventTypes or ["flow.failed"]))
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        subscription = AlertSubscription(channel=dto.channel, target=target, event_types=event_types, is_active=dto.isActive)
        session.add(subscription)
    return reply(request, alert_json(subscription), status=201)


async def _load(session, subscription_id: str) -> AlertSubscription:
    subscription = await session.scalar(select(AlertSubscription).where(AlertSubscription.id == subscription_id))
    if subscription is None:
        raise not_found("Alert subscription not found")
    return subscription


@routes.patch("/connect/v1/alerts/{subscriptionId}")
@accepts(UpdateAlertDto)
@returns(AlertOut)
@requires("alerts.write")
async def update_alert(request: web.Request) -> web.Response:
    """Change an alert subscription: isActive, target, eventTypes."""
    dto = await read_alert(request, UpdateAlertDto)
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        subscription = await _load(session, request.match_info["subscriptionId"])
        if dto.isActive is not None:
            subscription.is_active = dto.isActive
        if dto.target is not None:
            subscription.target = _check_target(request, subscription.channel, dto.target)
        if dto.eventTypes is not None:
            subscription.event_types = list(dict.fromkeys(dto.eventTypes))
    return reply(request, alert_json(subscription))


@routes.delete("/connect/v1/alerts/{subscriptionId}")
@returns(AlertDeleted)
@requires("alerts.write")
async def delete_alert(request: web.Request) -> web.Response:
    """Delete an alert subscription."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        await session.delete(await _load(session, request.match_info["subscriptionId"]))
    return reply(request, {"success": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    app[JOBS].register(JOB_KIND, deliver_job, max_attempts=5, backoff_base=2.0, backoff_cap=300.0)
    app[JOBS].register(operator_events.FANOUT_JOB, operator_events.fanout_job, max_attempts=operator_events.FANOUT_MAX_ATTEMPTS, backoff_base=2.0)
    app[CRON].add(CronJob("job-failures", operator_events.CHECK_INTERVAL_SECONDS, operator_events.check_job_failures))
