"""The limits service: every resource reached and refused with the exact message, monthly metering
(one row per workspace, metric and month), configured limits and registered counters."""

from __future__ import annotations

import shutil

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.billing.limits import DEFAULT_LIMITS, RESOURCES, enforce_limit, monthly_usage, record_usage, register_counter, resolve_limits
from patchbay.core.billing.models import UsageCounter
from patchbay.core.errors import PlanLimitExceeded
from patchbay.core.http.errors import domain_status
from patchbay.core.settings import SettingsError
from patchbay.core.testing import create_workspace_with_key


async def _refusal(app, workspace_id, resource, adding=1):
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        try:
            await enforce_limit(session, workspace_id, resource, adding=adding)
        except PlanLimitExceeded as error:  # a domain error, answered 403 by the one HTTP mapping
            assert error.resource == resource and error.limit is not None
            return domain_status(error), error.message.partition(":")[0]  # the remedy after it: test_billing_default_plan.py
    return None


def test_template_clones_follow_spec_8a():
    assert DEFAULT_LIMITS["free"]["template_clones"] == 3
    assert DEFAULT_LIMITS["starter"]["template_clones"] == 10
    assert DEFAULT_LIMITS["professional"]["template_clones"] is None
    assert DEFAULT_LIMITS["enterprise"]["template_clones"] is None


@pytest.mark.parametrize("resource", ["template_clones", "action_executions"])
async def test_monthly_limit_reached_and_refused(make_app, resource, database_url):
    app = make_app(database_url=database_url, plans={"free": {"action_executions": 4}})
    ws = (await create_workspace_with_key(app))["workspace_id"]
    limit = 3 if resource == "template_clones" else 4
    for _ in range(limit):
        assert await _refusal(app, ws, resource) is None
        async with app[SERVICES].db.transaction(tenant=ws) as session:
            await record_usage(session, ws, resource)
    assert await _refusal(app, ws, resource) == (403, f"Plan limit exceeded for {resource}")
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        rows = (await session.scalars(select(UsageCounter).where(UsageCounter.metric == resource))).all()
        assert [row.count for row in rows] == [limit]
        assert await monthly_usage(session, ws, resource) == limit
    await app[SERVICES].db.close()


@pytest.mark.parametrize("resource", ["active_triggers", "table_rows", "providers"])
@pytest.mark.slow  # about 2 s (setup and call)
async def test_counted_limit_reached_and_refused(make_app, resource):
    app = make_app(plans={"starter": {resource: 2}})
    ws = (await create_workspace_with_key(app, plan="starter"))["workspace_id"]
    current = {"n": 0}
    seen = []

    async def counter(session, workspace_id):
        seen.append(workspace_id)
        return current["n"]

    register_counter(app[SERVICES], resource, counter)
    assert await _refusal(app, ws, resource, adding=2) is None
    current["n"] = 1
    assert await _refusal(app, ws, resource) is None
    assert await _refusal(app, ws, resource, adding=2) == (403, f"Plan limit exceeded for {resource}")
    current["n"] = 2
    assert await _refusal(app, ws, resource) == (403, f"Plan limit exceeded for {resource}")
    assert set(seen) == {ws}
    await app[SERVICES].db.close()


async def test_unlimited_plans_and_other_workspaces_unaffected(make_app):
    app = make_app()
    pro = (await create_workspace_with_key(app, plan="professional"))["workspace_id"]
    free = (await create_workspace_with_key(app, name="Other"))["workspace_id"]
    async with app[SERVICES].db.transaction(tenant=pro) as session:
        await record_usage(session, pro, "template_clones", 50)
    assert await _refusal(app, pro, "template_clones") is None
    assert await _refusal(app, free, "template_clones") is None
    await app[SERVICES].db.close()


def test_plan_settings_validated():
    assert resolve_limits({"free": {"providers": "unlimited", "table_rows": 7}})["free"]["providers"] is None
    assert resolve_limits({"free": {"table_rows": 7}})["free"]["table_rows"] == 7
    with pytest.raises(SettingsError, match="gold"):
        resolve_limits({"gold": {}})
    with pytest.raises(SettingsError, match="seats"):
        resolve_limits({"free": {"seats": 1}})
    with pytest.raises(SettingsError, match="table_rows"):
        resolve_limits({"free": {"table_rows": "many"}})
    assert set(RESOURCES) == set(DEFAULT_LIMITS["free"])


async def test_usage_and_history_routes(client, workspace):
    app = client.server.app
    ws = workspace["workspace_id"]

    async def rows(session, workspace_id):
        return 7

    register_counter(app[SERVICES], "table_rows", rows)
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        await record_usage(session, ws, "action_executions", 5)
        await record_usage(session, ws, "template_clones")
        session.add(UsageCounter(workspace_id=ws, metric="action_executions", period="2020-01", count=40))
    usage = await (await client.get("/connect/v1/billing/usage", headers=workspace["headers"])).json()
    assert usage["plan"] == "free"
    assert usage["usage"]["action_executions"] == {"used": 5, "limit": 1000, "period": "month"}
    assert usage["usage"]["template_clones"]["used"] == 1
    assert usage["usage"]["table_rows"] == {"used": 7, "limit": 1000, "period": "total"}
    history = await (await client.get("/connect/v1/billing/usage/history", headers=workspace["headers"])).json()
    assert [entry["period"] for entry in history["data"]] == [usage["period"], "2020-01"]
    assert history["data"][1]["usage"] == {"template_clones": 0, "action_executions": 40}
    limited = await (await client.get("/connect/v1/billing/usage/history?months=1", headers=workspace["headers"])).json()
    assert len(limited["data"]) == 1
    other = await create_workspace_with_key(app, name="Other")
    theirs = await (await client.get("/connect/v1/billing/usage/history", headers=other["headers"])).json()
    assert theirs["data"] == []
    assert (await client.get("/connect/v1/billing/usage")).status == 401


@pytest.mark.both_databases
async def test_consume_is_atomic_under_concurrency(make_app, database_url):
    import asyncio

    from patchbay.core.billing.limits import consume

    app = make_app(database_url=database_url, plans={"free": {"action_executions": 5}})
    ws = (await create_workspace_with_key(app))["workspace_id"]
    async with app[SERVICES].db.transaction(tenant=ws) as session:  # the month's row exists
        await consume(session, ws, "action_executions")

    async def one():
        async with app[SERVICES].db.transaction(tenant=ws) as session:
            await consume(session, ws, "action_executions")

    outcomes = await asyncio.gather(*(one() for _ in range(8)), return_exceptions=True)
    refused = [o for o in outcomes if isinstance(o, PlanLimitExceeded)]
    assert len(refused) == 4 and all(o.message.startswith("Plan limit exceeded for action_executions:") for o in refused)
    assert [o for o in outcomes if o is not None and not isinstance(o, PlanLimitExceeded)] == []
    async with app[SERVICES].db.session() as session:
        assert await monthly_usage(session, ws, "action_executions") == 5
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        try:
            await consume(session, ws, "action_executions", 6)
        except PlanLimitExceeded as error:
            assert (error.resource, error.plan, error.limit) == ("action_executions", "free", 5)
        else:
            raise AssertionError("consume over the limit was accepted")
    await app[SERVICES].db.close()


async def test_two_apps_in_one_process_keep_their_own_limits(make_app, sqlite_template, tmp_path):
    """The limits a session sees come from the app owning its database (``Database.context``),
    not from state shared by every app of the process."""
    shutil.copy(sqlite_template, tmp_path / "loose.db")
    strict = make_app(plans={"free": {"action_executions": 1}})
    loose = make_app(database_url=f"sqlite+aiosqlite:///{tmp_path / 'loose.db'}", plans={"free": {"action_executions": 5}})
    workspaces = {}
    for app in (strict, loose):
        ws = workspaces[id(app)] = (await create_workspace_with_key(app))["workspace_id"]
        async with app[SERVICES].db.transaction(tenant=ws) as session:
            await record_usage(session, ws, "action_executions")
    assert await _refusal(strict, workspaces[id(strict)], "action_executions") == (403, "Plan limit exceeded for action_executions")
    assert await _refusal(loose, workspaces[id(loose)], "action_executions") is None
    for app in (strict, loose):
        await app[SERVICES].db.close()
