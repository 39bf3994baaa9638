"""Plan limits and monthly usage metering: the one service every route calls (spec 8A).

Use from any feature, inside the transaction that makes the change::

    from patchbay.core.billing.limits import enforce_limit, record_usage

    await enforce_limit(session, workspace_id, "template_clones")      # PlanLimitExceeded when over the plan
    ... create the clone ...
    await record_usage(session, workspace_id, "template_clones")       # count it this month

or, for a monthly resource, ``await consume(session, workspace_id, "action_executions")``: check and
count in one statement, so concurrent requests cannot both take the last unit.

``enforce_limit`` raises :func:`limit_reached`, a ``core.errors.PlanLimitExceeded`` (a domain
error that ``core.http.errors`` answers as 403): ``Plan limit exceeded for <resource>`` followed by
the plan's cap and the remedy (``patchbay workspaces set-plan``), when ``current + adding`` would
go over the workspace plan's limit. Resources (``RESOURCES``):

- monthly, metered by ``record_usage`` (one row per workspace, metric and UTC month, upserted):
  ``template_clones`` (Free 3, Starter 10, Professional and Enterprise unlimited: spec 8A),
  ``action_executions``;
- totals counted now by the owning feature: ``active_triggers``, ``table_rows``, ``providers``
  (connected providers). The owner registers a counter in its ``install(services)``, so this module
  never imports another feature's models::

      from patchbay.core.billing.limits import register_counter

      async def count_rows(session, workspace_id: str) -> int: ...
      register_counter(services, "table_rows", count_rows)

  A total resource without a registered counter counts as 0 (nothing to limit yet).

Limits per plan come from ``DEFAULT_LIMITS`` overridden by the settings tables ``[plans.<plan>]``
(``template_clones = 5``; ``"unlimited"`` or ``-1`` for no limit); an unknown plan or resource there
stops the start with a message naming it. ``enforce_limit`` and ``record_usage`` take only a session:
the limits of the services the session belongs to are found through the session's ``info``, which
:func:`install` fills through the services' ``Database`` (``Database.context``), and defaults apply
to a session of a database without services.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.billing.models import UsageCounter
from patchbay.core.errors import PlanLimitExceeded
from patchbay.core.settings import SettingsError
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.workspaces.models import PLANS, Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

MONTHLY_RESOURCES = ("template_clones", "action_executions")
TOTAL_RESOURCES = ("active_triggers", "table_rows", "providers")
RESOURCES = MONTHLY_RESOURCES + TOTAL_RESOURCES

#: ``None`` means unlimited. Only template clones are fixed by the spec (8A); the rest are ours.
DEFAULT_LIMITS: dict[str, dict[str, int | None]] = {
    "free": {"template_clones": 3, "action_executions": 1_000, "active_triggers": 5, "table_rows": 1_000, "providers": 3},
    "starter": {"template_clones": 10, "action_executions": 10_000, "active_triggers": 25, "table_rows": 10_000, "providers": 10},
    "professional": {"template_clones": None, "action_executions": 100_000, "active_triggers": 100, "table_rows": 100_000, "providers": 50},
    "enterprise": {"template_clones": None, "action_executions": None, "active_triggers": None, "table_rows": None, "providers": None},
}

Counter = Callable[[AsyncSession, str], Awaitable[int]]


def current_period(now: datetime | None = None) -> str:
    """The metering period of ``now`` (UTC): ``YYYY-MM``."""
    return (now or utcnow()).strftime("%Y-%m")


def _limit_value(where: str, value: Any) -> int | None:
    if value is None or value == "unlimited" or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(f'{where}: {value!r} is not a whole number, -1 or "unlimited"')
    return value


def resolve_limits(overrides: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, int | None]]:
    """``DEFAULT_LIMITS`` with the ``[plans.<plan>]`` tables applied; SettingsError on unknown keys."""
    table = {plan: dict(values) for plan, values in DEFAULT_LIMITS.items()}
    for plan, values in (overrides or {}).items():
        if plan not in PLANS:
            raise SettingsError(f"[plans.{plan}]: unknown plan; known: {', '.join(PLANS)}")
        if not isinstance(values, Mapping):
            raise SettingsError(f"[plans.{plan}] must be a table")
        for resource, value in values.items():
            if resource not in RESOURCES:
                raise SettingsError(f"[plans.{plan}]: unknown limit {resource!r}; known: {', '.join(RESOURCES)}")
            table[plan][resource] = _limit_value(f"[plans.{plan}] {resource}", value)
    return table


class PlanLimits:
    """The limits of every plan and the counters of total resources, for one set of services."""

    def __init__(self, limits: dict[str, dict[str, int | None]] | None = None) -> None:
        self.limits = limits or resolve_limits(None)
        self.counters: dict[str, Counter] = {}

    def limit(self, plan: str, resource: str) -> int | None:
        if resource not in RESOURCES:
            raise ValueError(f"unknown plan resource {resource!r}")
        return self.limits.get(plan, self.limits["free"])[resource]

    def register_counter(self, resource: str, counter: Counter) -> None:
        if resource not in TOTAL_RESOURCES:
            raise ValueError(f"{resource!r} is not a counted resource; one of {', '.join(TOTAL_RESOURCES)}")
        self.counters[resource] = counter

    async def current(self, session: AsyncSession, workspace_id: str, resource: str) -> int:
        """This month's usage of a monthly resource, or the current total of a counted one."""
        if resource in MONTHLY_RESOURCES:
            return await monthly_usage(session, workspace_id, resource)
        counter = self.counters.get(resource)
        return int(await counter(session, workspace_id)) if counter is not None else 0


#: the key of ``Database.context`` (so of every session's ``info``) naming the services that own it
_SERVICES = "patchbay.services"


def install(services: Services) -> None:
    """The plan limits of ``services`` (the ``[plans.<plan>]`` tables are checked here, at start),
    and the services made findable from any session of their database."""
    services.limits = PlanLimits(resolve_limits(services.settings.plans))
    services.db.context[_SERVICES] = weakref.ref(services)


def services_of(session: AsyncSession) -> Services | None:
    """The services whose database ``session`` was opened on (None for a database without them)."""
    ref = session.info.get(_SERVICES)
    return ref() if ref is not None else None


def limits_of(services: Services | None) -> PlanLimits:
    """The plan limits of ``services``; the defaults when there are none."""
    limits = services.limits if services is not None else None
    return limits if limits is not None else PlanLimits()


def register_counter(services: Services, resource: str, counter: Counter) -> None:
    """Register ``async counter(session, workspace_id) -> int`` counting a total resource now."""
    services.limits.register_counter(resource, counter)


def _limits_for_session(session: AsyncSession) -> PlanLimits:
    return limits_of(services_of(session))


async def workspace_plan(session: AsyncSession, workspace_id: str) -> str:
    plan = await session.scalar(select(Workspace.plan).where(Workspace.id == workspace_id))
    return plan or "free"


def limit_reached(workspace_id: str, plan: str, resource: str, limit: int) -> PlanLimitExceeded:
    """``Plan limit exceeded for <resource>`` (403 over HTTP), saying what the plan allows and how
    an operator lifts it."""
    per = " this month" if resource in MONTHLY_RESOURCES else ""
    message = (
        f"Plan limit exceeded for {resource}: plan {plan} allows {limit}{per}; an operator lifts it with "
        f"`patchbay workspaces set-plan --workspace {workspace_id} --plan enterprise` or a [plans.{plan}] setting"
    )
    return PlanLimitExceeded(message, resource=resource, plan=plan, limit=limit)


async def enforce_limit(session: AsyncSession, workspace_id: str, resource: str, *, adding: int = 1) -> None:
    """Raise ``PlanLimitExceeded`` (``Plan limit exceeded for <resource>``) when adding ``adding``
    would go over the workspace plan's limit of ``resource``."""
    limits = _limits_for_session(session)
    plan = await workspace_plan(session, workspace_id)
    limit = limits.limit(plan, resource)
    if limit is None:
        return
    if await limits.current(session, workspace_id, resource) + adding > limit:
        raise limit_reached(workspace_id, plan, resource, limit)


async def monthly_usage(session: AsyncSession, workspace_id: str, metric: str, period: str | None = None) -> int:
    value = await session.scalar(
        select(UsageCounter.count).where(
            UsageCounter.workspace_id == workspace_id, UsageCounter.metric == metric, UsageCounter.period == (period or current_period())
        )
    )
    return int(value or 0)


def _counter_upsert(session: AsyncSession, workspace_id: str, metric: str, amount: int, *, limit: int | None = None):
    """INSERT the month's counter or add to it; with ``limit``, only while it stays within it."""
    now = utcnow()
    insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
    table = UsageCounter.__table__
    statement = insert(table).values(
        id=new_id(), workspace_id=workspace_id, metric=metric, period=current_period(now), count=amount, created_at=now, updated_at=now
    )
    return statement.on_conflict_do_update(
        index_elements=[table.c.workspace_id, table.c.metric, table.c.period],
        set_={"count": table.c.count + statement.excluded.count, "updated_at": statement.excluded.updated_at},
        where=(table.c.count + statement.excluded.count <= limit) if limit is not None else None,
    )


async def record_usage(session: AsyncSession, workspace_id: str, metric: str, amount: int = 1) -> None:
    """Add ``amount`` to this month's counter of ``metric`` (one row per workspace, metric, month)."""
    await session.execute(_counter_upsert(session, workspace_id, metric, amount))


async def consume(session: AsyncSession, workspace_id: str, resource: str, amount: int = 1) -> None:
    """Count ``amount`` of a monthly resource only if it stays within the plan, in one statement
    (concurrent callers cannot both take the last unit); ``PlanLimitExceeded`` otherwise."""
    if resource not in MONTHLY_RESOURCES:
        raise ValueError(f"{resource!r} is not a monthly resource")
    plan = await workspace_plan(session, workspace_id)
    limit = _limits_for_session(session).limit(plan, resource)
    if limit is not None and amount > limit:
        raise limit_reached(workspace_id, plan, resource, limit)
    statement = _counter_upsert(session, workspace_id, resource, amount, limit=limit).returning(UsageCounter.__table__.c.id)
    if (await session.execute(statement)).first() is None:
        raise limit_reached(workspace_id, plan, resource, limit)
