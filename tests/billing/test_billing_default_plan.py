"""The plan of a new workspace is a setting (``[workspaces] default_plan``, enterprise unless set),
and a plan-limit refusal names its remedy."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from patchbay.cli.main import cli
from patchbay.core.appkeys import SERVICES
from patchbay.core.billing.limits import enforce_limit, register_counter
from patchbay.core.errors import PlanLimitExceeded
from patchbay.core.http.errors import domain_status
from patchbay.core.settings import AdminSettings, SettingsError, WorkspacesSettings, load_settings
from patchbay.core.testing import create_workspace_with_key

OPERATOR = {"x-api-key": "operator-secret"}


def test_the_default_plan_is_enterprise_and_comes_from_the_environment():
    assert load_settings({}, {}).workspaces.default_plan == "enterprise"
    assert load_settings({}, {"PATCHBAY_WORKSPACES_DEFAULT_PLAN": "free"}).workspaces.default_plan == "free"
    with pytest.raises(SettingsError, match="PATCHBAY_WORKSPACES_DEFAULT_PLAN: 'gold' is not one of free, starter"):
        load_settings({}, {"PATCHBAY_WORKSPACES_DEFAULT_PLAN": "gold"})


@pytest.mark.parametrize(("setting", "expected"), [(None, "enterprise"), ("free", "free")])
async def test_workspaces_created_without_a_plan_get_the_default(aiohttp_client, make_app, setting, expected):
    workspaces = WorkspacesSettings(default_plan=setting) if setting else WorkspacesSettings()
    client = await aiohttp_client(make_app(admin=AdminSettings(api_key="operator-secret"), workspaces=workspaces))
    created = await client.post("/connect/v1/workspaces", json={"name": "Self-hosted"}, headers=OPERATOR)
    assert created.status == 201, await created.text()
    assert (await created.json())["plan"] == expected
    account = await client.post("/accounts", json={"name": "Account"}, headers=OPERATOR)
    assert account.status == 201 and (await account.json())["plan"] == expected
    chosen = await client.post("/connect/v1/workspaces", json={"name": "Chosen", "plan": "starter"}, headers=OPERATOR)
    assert (await chosen.json())["plan"] == "starter"


def test_the_cli_creates_workspaces_on_the_default_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "default-plan-secret")
    monkeypatch.setenv("PATCHBAY_WORKSPACES_DEFAULT_PLAN", "starter")
    for name in ("PATCHBAY_DATABASE_URL", "PATCHBAY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    assert runner.invoke(cli, ["db", "upgrade"]).exit_code == 0
    created = runner.invoke(cli, ["workspaces", "create", "--name", "Ops", "--json"])
    assert created.exit_code == 0, created.output
    assert json.loads(created.output)["plan"] == "starter"


async def test_the_plan_limit_message_names_the_remedy(make_app):
    app = make_app()
    ws = (await create_workspace_with_key(app, plan="free"))["workspace_id"]

    async def three(_session, _workspace_id):
        return 3

    register_counter(app[SERVICES], "providers", three)
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        with pytest.raises(PlanLimitExceeded) as refused:
            await enforce_limit(session, ws, "providers")
    assert domain_status(refused.value) == 403
    assert refused.value.message == (
        "Plan limit exceeded for providers: plan free allows 3; an operator lifts it with "
        f"`patchbay workspaces set-plan --workspace {ws} --plan enterprise` or a [plans.free] setting"
    )
    await app[SERVICES].db.close()
