"""Invites: created by an administrator, emailed through SMTP, validated, accepted once; expired,
reused and foreign tokens refused."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import select, text, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.settings import SmtpSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Invite, Membership


async def test_invite_email_validate_accept_once(aiohttp_client, make_app, smtp_server, make_user):
    host, port, inbox = smtp_server
    app = make_app(background=True, smtp=SmtpSettings(host=host, port=port, sender="noreply@example.test"))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, name="Acme Corp")
    response = await client.post(
        f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "Bob@Example.test", "role": "manager"}, headers=ws["headers"]
    )
    assert response.status == 201, await response.text()
    created = await response.json()
    assert created["email"] == "bob@example.test" and created["role"] == "manager" and created["status"] == "valid"

    (message,) = await inbox.wait(1)
    assert message["To"] == "bob@example.test"
    assert "Acme Corp" in message["Subject"]
    text = message.get_payload(decode=True).decode()
    token = re.search(r"Invite token: (\S+)", text).group(1)
    assert token in created["inviteUrl"]

    async with app[SERVICES].db.session() as session:  # only a digest is stored
        row = (await session.scalars(select(Invite))).one()
        assert token not in (row.token_digest, str(row.__dict__))

    validated = await client.get(f"/connect/v1/workspaces/invite/validate/{token}")
    assert validated.status == 200
    body = await validated.json()
    assert body["valid"] is True and body["workspace"]["name"] == "Acme Corp" and body["role"] == "manager"

    _, other = await make_user(app, "mallory@example.test")
    wrong = await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=other)
    assert wrong.status == 403

    bob_id, bob = await make_user(app, "bob@example.test")
    accepted = await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=bob)
    assert accepted.status == 201, await accepted.text()
    assert (await accepted.json())["workspace"]["id"] == ws["workspace_id"]
    async with app[SERVICES].db.session() as session:
        membership = await session.scalar(select(Membership).where(Membership.user_id == bob_id))
        assert (membership.workspace_id, membership.role) == (ws["workspace_id"], "manager")

    again = await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=bob)
    assert again.status == 410
    assert (await again.json())["message"] == "Invite has already been used"
    assert (await client.get(f"/connect/v1/workspaces/invite/validate/{token}")).status == 410

    member = await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "bob@example.test"}, headers=ws["headers"])
    assert (member.status, (await member.json())["message"]) == (409, "bob@example.test is already a member of this workspace")

    mine = await client.get("/connect/v1/workspaces", headers=bob)
    assert [(w["id"], w["role"]) for w in (await mine.json())["data"]] == [(ws["workspace_id"], "manager")]


async def test_expired_and_unknown_invites_refused(aiohttp_client, make_app, make_user, database_url):
    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    response = await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "carol@example.test"}, headers=ws["headers"])
    token = (await response.json())["inviteUrl"].rsplit("/", 1)[1]
    async with app[SERVICES].db.session() as session:  # the queued email job carries the token encrypted
        (raw,) = (await session.execute(text("SELECT payload FROM jobs WHERE kind = 'workspaces.invite_email'"))).scalars().all()
        assert token not in str(raw) and "invite_id" in str(raw)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Invite).values(expires_at=utcnow() - timedelta(seconds=1)))
    _, carol = await make_user(app, "carol@example.test")
    expired = await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=carol)
    assert (expired.status, (await expired.json())["message"]) == (410, "Invite has expired")
    assert (await client.get(f"/connect/v1/workspaces/invite/validate/{token}")).status == 410
    unknown = await client.get("/connect/v1/workspaces/invite/validate/not-a-token")
    assert (unknown.status, (await unknown.json())["message"]) == (404, "Invite not found")
    assert (await client.post(f"/connect/v1/workspaces/invite/accept/{token}")).status == 401


async def test_invite_needs_workspace_admin_of_that_workspace(aiohttp_client, make_app):
    app = make_app()
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    other = await create_workspace_with_key(app, name="Other")
    viewer = await create_workspace_with_key(app, name="Viewer", permissions=[p for p in PERMISSIONS if p.endswith(".view")])
    body = {"email": "dan@example.test"}
    assert (await client.post(f"/connect/v1/workspaces/{other['workspace_id']}/invite", json=body, headers=ws["headers"])).status == 404
    assert (await client.post(f"/connect/v1/workspaces/{viewer['workspace_id']}/invite", json=body, headers=viewer["headers"])).status == 403
    bad = await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "dan@example.test", "role": "owner"}, headers=ws["headers"])
    assert bad.status == 400 and "role" in (await bad.json())["message"]


@pytest.mark.both_databases
async def test_concurrent_accepts_use_the_invite_once(aiohttp_client, make_app, make_user, database_url):
    import asyncio

    app = make_app(database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    response = await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "ivy@example.test"}, headers=ws["headers"])
    token = (await response.json())["inviteUrl"].rsplit("/", 1)[1]
    _, ivy = await make_user(app, "ivy@example.test")
    responses = await asyncio.gather(*(client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=ivy) for _ in range(4)))
    assert sorted(r.status for r in responses) == [201, 410, 410, 410]


async def test_accepting_as_a_member_keeps_the_role(aiohttp_client, make_app, make_user):
    app = make_app()
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    response = await client.post(
        f"/connect/v1/workspaces/{ws['workspace_id']}/invite", json={"email": "jo@example.test", "role": "admin"}, headers=ws["headers"]
    )
    token = (await response.json())["inviteUrl"].rsplit("/", 1)[1]
    link = await (await client.post(f"/connect/v1/workspaces/{ws['workspace_id']}/shareable-link", headers=ws["headers"])).json()
    jo_id, jo = await make_user(app, "jo@example.test")
    await client.post(f"/connect/v1/workspaces/join/link/{ws['workspace_id']}", json={"token": link["token"]}, headers=jo)
    accepted = await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=jo)
    assert (accepted.status, (await accepted.json())["role"]) == (201, "viewer")
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(Membership.role).where(Membership.user_id == jo_id)) == "viewer"
    assert (await client.post(f"/connect/v1/workspaces/invite/accept/{token}", headers=jo)).status == 410
