"""Attacks on ``GET /auth/{provider}/login?token=...`` (the link form of an OAuth login), sent over
HTTP as an outsider would: a token that the ``Authorization`` header path refuses must be refused in
the URL too, and who counts as an approver must not depend on where the token came from.

The user of the identity provider's test driver is a member of the workspace; the fake provider's
``fakeoauth`` is the provider connected."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.models import ApprovalPolicy, ApprovalRequest
from patchbay.core.connections.models import OAuthState
from patchbay.core.workspaces.models import Membership


def _load(name: str, path: Path):
    """tests/ is no package (--import-mode=importlib): helpers are loaded by path."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


identity_driver = _load("conftest_sessions_login_token", Path(__file__).with_name("conftest_sessions.py")).identity_driver
_connections = _load("connections_conftest_login_token", Path(__file__).parents[1] / "connections" / "conftest.py")
fake_provider, fake = _connections.fake_provider, _connections.fake  # the fake provider's server (a fixture)

SCOPE = "openid organization permissions offline_access"


@pytest.fixture
async def idp(aiohttp_client, make_app, fake, database_url):
    """The identity provider's driver on an app that also knows the fake providers."""

    def app_with_fake(**overrides):
        return make_app(plugins=[fake_provider.FakePack(fake.base)], providers=fake_provider.provider_settings(), database_url=database_url, **overrides)

    return await identity_driver.make_idp.__wrapped__(aiohttp_client, app_with_fake)()


async def user_token(idp, client) -> str:
    return (await idp.tokens(client, scope=SCOPE))["access_token"]


async def login_by_link(idp, token: str):
    return await idp.http.get("/auth/fakeoauth/login", params={"token": token}, allow_redirects=False)


async def logins_started(idp) -> int:
    async with idp.app[SERVICES].db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(OAuthState)))


async def set_role(idp, role: str) -> None:
    async with idp.app[SERVICES].db.transaction() as session:
        await session.execute(update(Membership).where(Membership.user_id == idp.user["id"]).values(role=role))


async def gate_fakeoauth(idp) -> None:
    """The workspace's approval policy: connecting fakeoauth needs an admin's approval."""
    async with idp.app[SERVICES].db.transaction(tenant=idp.workspace["workspace_id"]) as session:
        session.add(ApprovalPolicy(workspace_id=idp.workspace["workspace_id"], enabled=True, providers=["fakeoauth"], categories=[], approver_roles=["admin"]))


async def test_a_first_party_token_in_the_url_starts_a_login_as_in_the_header(idp):
    """The legitimate use: the operator's own app sends its user to the login link."""
    token = await user_token(idp, await idp.operator_client())
    header = await idp.http.get("/auth/fakeoauth/login", headers={"Authorization": f"Bearer {token}"}, allow_redirects=False)
    link = await login_by_link(idp, token)
    assert header.status == 302 and link.status == 302, await link.text()
    assert "/auth/fakeoauth/begin?state=" in link.headers["Location"]


async def test_a_self_registered_apps_token_in_the_url_is_refused(idp):
    token = await user_token(idp, await idp.register(client_name="Evil"))
    refused = await idp.http.get("/connect/v1/connections", headers={"Authorization": f"Bearer {token}"})
    assert refused.status == 401  # the connect API refuses a third-party app's token ...
    response = await login_by_link(idp, token)
    assert response.status == 401, await response.text()  # ... and so does the login link
    assert (await response.json())["statusCode"] == 401
    assert await logins_started(idp) == 0


async def test_a_token_of_a_revoked_grant_in_the_url_is_refused(idp):
    client = await idp.operator_client()
    tokens = await idp.tokens(client, scope=SCOPE)
    signed_out = await idp.http.get("/api/v1/oidc/end-session", params={"id_token_hint": tokens["id_token"]}, allow_redirects=False)
    assert signed_out.status == 302  # sign-out revokes the grants of the session
    refused = await idp.http.get("/connect/v1/connections", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert refused.status == 401
    response = await login_by_link(idp, tokens["access_token"])
    assert response.status == 401, await response.text()
    assert await logins_started(idp) == 0


async def test_an_admins_token_held_by_a_self_registered_app_does_not_pass_the_approval_policy(idp):
    await set_role(idp, "admin")
    await gate_fakeoauth(idp)
    token = await user_token(idp, await idp.register(client_name="Evil"))
    response = await login_by_link(idp, token)
    assert response.status == 401, await response.text()
    assert await logins_started(idp) == 0


async def test_approver_status_is_the_same_whichever_way_the_token_came(idp):
    """A manager's first-party token is held for approval and an admin's is not, in the header and
    in the URL alike."""
    await gate_fakeoauth(idp)
    client = await idp.operator_client()
    manager = await user_token(idp, client)
    held = [
        await idp.http.get("/auth/fakeoauth/login", headers={"Authorization": f"Bearer {manager}"}, allow_redirects=False),
        await login_by_link(idp, manager),
    ]
    assert [r.status for r in held] == [202, 202], [await r.text() for r in held]
    await set_role(idp, "admin")
    admin = await user_token(idp, client)
    passed = [await idp.http.get("/auth/fakeoauth/login", headers={"Authorization": f"Bearer {admin}"}, allow_redirects=False), await login_by_link(idp, admin)]
    assert [r.status for r in passed] == [302, 302]
    async with idp.app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(ApprovalRequest)) == 2  # one request per held login of the manager
