"""Administration commands of contract section 3; each prints JSON with ``--json``."""

from __future__ import annotations

import re
from datetime import timedelta

import click

from patchbay.cli.clients import clients
from patchbay.cli.runtime import confirm_delete, emit, json_option, run_with_database
from patchbay.core.flows.template_review import NotPendingReview, decide, pending_templates
from patchbay.core.security.api_keys import UnknownPermission, api_key_json, create_api_key, list_api_keys, revoke_api_key
from patchbay.core.security.models import ApiKey
from patchbay.core.security.signing_keys import SigningKeys
from patchbay.core.timeutil import iso
from patchbay.core.users.service import UserError, UserExists, create_user, delete_user, find_user, list_users
from patchbay.core.workspaces.models import PLANS, ROLES, Workspace
from patchbay.core.workspaces.service import WorkspaceError, add_member, create_workspace, delete_workspace, list_workspaces, member_counts, memberships_of


def _fail(error: Exception) -> click.ClickException:
    return click.ClickException(str(error))


def _workspace_json(workspace: Workspace, members: int | None = None) -> dict:
    data = {
        "id": workspace.id,
        "name": workspace.name,
        "slug": workspace.slug,
        "plan": workspace.plan,
        "externalId": workspace.external_id,
        "createdAt": iso(workspace.created_at),
    }
    return data if members is None else {**data, "members": members}


def _user_json(user) -> dict:
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "emailVerified": user.email_verified,
        "operator": user.is_operator,
        "createdAt": iso(user.created_at),
    }


async def _require_workspace(session, workspace_id: str) -> Workspace:
    workspace = await session.get(Workspace, workspace_id)
    if workspace is None:
        raise click.ClickException(f"no workspace with id {workspace_id}")
    return workspace


# -- workspaces -----------------------------------------------------------------------------------


@click.group("workspaces")
def workspaces() -> None:
    """Workspaces (tenants)."""


@workspaces.command("create")
@click.option("--name", required=True)
@click.option("--plan", type=click.Choice(PLANS), help="Default: the setting [workspaces] default_plan (enterprise).")
@click.option("--external-id", help="Your own id for it; creating it again answers the same workspace.")
@json_option
def workspaces_create(name: str, plan: str | None, external_id: str | None, as_json: bool) -> None:
    """Create a workspace."""

    async def work(settings, db, _box):
        async with db.transaction() as session:
            try:
                workspace, created = await create_workspace(session, name=name, plan=plan or settings.workspaces.default_plan, external_id=external_id)
            except WorkspaceError as error:
                raise _fail(error) from None
            return {
                "id": workspace.id,
                "name": workspace.name,
                "slug": workspace.slug,
                "plan": workspace.plan,
                "externalId": workspace.external_id,
                "created": created,
                "createdAt": iso(workspace.created_at),
            }

    data = run_with_database(work)
    emit(data, as_json, f"workspace {data['id']} ({data['name']}, plan {data['plan']})")


@workspaces.command("set-plan")
@click.option("--workspace", "workspace_id", required=True)
@click.option("--plan", type=click.Choice(PLANS), required=True)
@json_option
def workspaces_set_plan(workspace_id: str, plan: str, as_json: bool) -> None:
    """Set a workspace's plan (billing without a payment provider, or an operator override)."""

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            workspace = await _require_workspace(session, workspace_id)
            workspace.plan = plan
            return {"id": workspace.id, "name": workspace.name, "plan": workspace.plan}

    data = run_with_database(work)
    emit(data, as_json, f"workspace {data['id']} ({data['name']}) is on plan {data['plan']}")


@workspaces.command("list")
@json_option
def workspaces_list(as_json: bool) -> None:
    """List every workspace with its plan and member count."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            counts = await member_counts(session)
            return [_workspace_json(w, counts.get(w.id, 0)) for w in await list_workspaces(session)]

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{w['id']}  {w['plan']:<12} {w['members']:>3} members  {w['name']}" for w in data) or "no workspaces")


@workspaces.command("show")
@click.argument("workspace_id")
@json_option
def workspaces_show(workspace_id: str, as_json: bool) -> None:
    """Show one workspace."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            workspace = await _require_workspace(session, workspace_id)
            return _workspace_json(workspace, (await member_counts(session)).get(workspace.id, 0))

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{key}: {value}" for key, value in data.items()))


@workspaces.command("delete")
@click.argument("workspace_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def workspaces_delete(workspace_id: str, yes: bool, as_json: bool) -> None:
    """Delete a workspace with everything it owns (connections, flows, tables, keys, ...)."""
    confirm_delete(yes, f"workspace {workspace_id} and everything it owns")

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            if not await delete_workspace(session, workspace_id):
                raise click.ClickException(f"no workspace with id {workspace_id}")
            return {"id": workspace_id, "deleted": True}

    data = run_with_database(work)
    emit(data, as_json, f"workspace {workspace_id} deleted")


# -- API keys -------------------------------------------------------------------------------------


@click.group("api-keys")
def api_keys() -> None:
    """API keys for the x-api-key header."""


_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _duration(_ctx, _param, value: str | None) -> timedelta | None:
    """``90d``, ``12h``, ``30m`` or ``3600s`` as a timedelta (None when not given)."""
    if value is None:
        return None
    match = _DURATION.match(value.strip())
    if match is None or int(match.group(1)) == 0:
        raise click.BadParameter("a positive duration like 90d, 12h, 30m or 3600s")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


@api_keys.command("create")
@click.option("--workspace", "workspace_id", required=True)
@click.option("--name", default="default", show_default=True)
@click.option("--permission", "permissions", multiple=True, help="Repeat for each; default: every permission.")
@click.option("--expires-in", callback=_duration, help="The key stops working after this long (90d, 12h, 30m, 3600s); default: never.")
@json_option
def api_keys_create(workspace_id: str, name: str, permissions: tuple[str, ...], expires_in: timedelta | None, as_json: bool) -> None:
    """Create an API key; the key is shown once."""

    async def work(_settings, db, box):
        async with db.transaction() as session:
            await _require_workspace(session, workspace_id)
            try:
                issued = await create_api_key(session, box, workspace_id=workspace_id, name=name, permissions=list(permissions), expires_in=expires_in)
            except UnknownPermission as error:
                raise _fail(error) from None
            return {**api_key_json(issued.record), "key": issued.key}

    data = run_with_database(work)
    emit(data, as_json, f"API key {data['id']} for workspace {workspace_id}:\n{data['key']}\n(it is not shown again)")


@api_keys.command("list")
@click.option("--workspace", "workspace_id", required=True)
@json_option
def api_keys_list(workspace_id: str, as_json: bool) -> None:
    """A workspace's API keys with status, expiry and last use; never the keys themselves."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            await _require_workspace(session, workspace_id)
            return [api_key_json(record) for record in await list_api_keys(session, workspace_id)]

    data = run_with_database(work)
    lines = [
        f"{k['id']}  {k['prefix']}…  {k['status']:8}  {k['name']}  expires {k['expiresAt'] or 'never'}  last used {k['lastUsedAt'] or 'never'}" for k in data
    ]
    emit(data, as_json, "\n".join(lines) or f"no API keys in workspace {workspace_id}")


@api_keys.command("revoke")
@click.argument("key_id")
@json_option
def api_keys_revoke(key_id: str, as_json: bool) -> None:
    """Revoke an API key; every process refuses it within the key cache lifetime (5 seconds)."""

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            if not await revoke_api_key(session, key_id):
                raise click.ClickException(f"no active API key with id {key_id}")
            return {"id": key_id, "revoked": True}

    data = run_with_database(work)
    emit(data, as_json, f"API key {key_id} revoked")


async def _require_api_key(session, key_id: str) -> ApiKey:
    record = await session.get(ApiKey, key_id)
    if record is None:
        raise click.ClickException(f"no API key with id {key_id}")
    return record


@api_keys.command("show")
@click.argument("key_id")
@json_option
def api_keys_show(key_id: str, as_json: bool) -> None:
    """Show one API key (status, permissions, expiry, last use); never the key itself."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            return api_key_json(await _require_api_key(session, key_id))

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{key}: {value}" for key, value in data.items()))


@api_keys.command("delete")
@click.argument("key_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def api_keys_delete(key_id: str, yes: bool, as_json: bool) -> None:
    """Delete an API key for good (``revoke`` keeps it listed as revoked); every process refuses it
    within the key cache lifetime (5 seconds)."""
    confirm_delete(yes, f"API key {key_id}")

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            await session.delete(await _require_api_key(session, key_id))
            return {"id": key_id, "deleted": True}

    data = run_with_database(work)
    emit(data, as_json, f"API key {key_id} deleted")


# -- flow templates -------------------------------------------------------------------------------


@click.group("templates")
def templates() -> None:
    """Review of flow templates that workspaces ask to make public."""


@templates.command("list")
@json_option
def templates_list(as_json: bool) -> None:
    """Templates waiting for review."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            return [
                {"id": t.id, "slug": t.slug, "name": t.name, "workspaceId": t.workspace_id, "visibility": t.visibility}
                for t in await pending_templates(session)
            ]

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{t['id']}  {t['slug']}  {t['name']}  workspace {t['workspaceId']}" for t in data) or "no templates pending review")


def _review(template_ref: str, approve: bool, as_json: bool) -> None:
    async def work(_settings, db, _box):
        async with db.transaction() as session:
            try:
                template = await decide(session, template_ref, approve=approve)
            except NotPendingReview as error:
                raise _fail(error) from None
            return {"id": template.id, "slug": template.slug, "visibility": template.visibility}

    data = run_with_database(work)
    emit(data, as_json, f"template {data['slug']} is now {data['visibility']}")


@templates.command("approve")
@click.argument("template_ref")
@json_option
def templates_approve(template_ref: str, as_json: bool) -> None:
    """Make a template pending review public (TEMPLATE_REF: its id or slug)."""
    _review(template_ref, True, as_json)


@templates.command("reject")
@click.argument("template_ref")
@json_option
def templates_reject(template_ref: str, as_json: bool) -> None:
    """Send a template pending review back to private (TEMPLATE_REF: its id or slug)."""
    _review(template_ref, False, as_json)


# -- users ----------------------------------------------------------------------------------------


@click.group("users")
def users() -> None:
    """People who log in."""


@users.command("create")
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--name")
@click.option("--workspace", "workspace_id")
@click.option("--role", type=click.Choice(ROLES), default="admin", show_default=True)
@click.option("--operator", is_flag=True, help="An operator of the deployment: the console shows them every workspace.")
@json_option
def users_create(email: str, password: str, name: str | None, workspace_id: str | None, role: str, operator: bool, as_json: bool) -> None:
    """Create a user, optionally a member of a workspace, optionally an operator."""

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            if workspace_id:
                await _require_workspace(session, workspace_id)
            try:
                user = await create_user(session, email=email, password=password, name=name, is_operator=operator)
            except (UserError, UserExists) as error:
                raise _fail(error) from None
            if workspace_id:
                await add_member(session, workspace_id=workspace_id, user_id=user.id, role=role)
            return {
                "id": user.id,
                "email": user.email,
                "name": user.name,
                "workspaceId": workspace_id,
                "role": role if workspace_id else None,
                "operator": user.is_operator,
            }

    data = run_with_database(work)
    emit(data, as_json, f"user {data['id']} ({data['email']})")


async def _require_user(session, id_or_email: str):
    user = await find_user(session, id_or_email)
    if user is None:
        raise click.ClickException(f"no user {id_or_email}")
    return user


@users.command("list")
@json_option
def users_list(as_json: bool) -> None:
    """List every user."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            return [_user_json(user) for user in await list_users(session)]

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{u['id']}  {u['email']}" for u in data) or "no users")


@users.command("show")
@click.argument("user")
@json_option
def users_show(user: str, as_json: bool) -> None:
    """Show a user (by id or e-mail) and the workspaces they belong to."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            found = await _require_user(session, user)
            memberships = [{"workspaceId": w.id, "name": w.name, "role": role} for w, role in await memberships_of(session, found.id)]
            return {**_user_json(found), "memberships": memberships}

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{key}: {value}" for key, value in data.items()))


@users.command("delete")
@click.argument("user")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def users_delete(user: str, yes: bool, as_json: bool) -> None:
    """Delete a user (by id or e-mail): memberships, grants and sessions go with it."""
    confirm_delete(yes, f"user {user}")

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            found = await _require_user(session, user)
            await delete_user(session, found)
            return {"id": found.id, "email": found.email, "deleted": True}

    data = run_with_database(work)
    emit(data, as_json, f"user {data['email']} deleted")


# -- signing keys ---------------------------------------------------------------------------------


@click.group("keys")
def keys() -> None:
    """Signing keys of the identity provider."""


@keys.command("rotate")
@json_option
def keys_rotate(as_json: bool) -> None:
    """Make a new current signing key; the old one stays in the JWKS as previous."""

    async def work(_settings, db, box):
        signing = SigningKeys(db, box)
        kid = await signing.rotate()
        return {"kid": kid, "jwks": await signing.jwks()}

    data = run_with_database(work)
    emit(data, as_json, f"new current signing key {data['kid']}")


# -- providers ------------------------------------------------------------------------------------


@click.group("providers")
def providers() -> None:
    """The provider registry."""


@providers.command("list")
@click.option("--category")
@json_option
def providers_list(category: str | None, as_json: bool) -> None:
    """List installed providers."""
    from patchbay.cli.runtime import registry_from, settings_from
    from patchbay.core.http.providers import provider_json

    _, registry = registry_from(settings_from())
    found = sorted(registry.providers.values(), key=lambda p: p.name)
    if category:
        found = [p for p in found if category in p.all_categories]
    data = [provider_json(p) for p in found]
    emit(data, as_json, "\n".join(f"{p['name']:<32} {p['category']:<16} {p['authMode']}" for p in data) or "no providers")


COMMANDS = [workspaces, api_keys, templates, users, keys, providers, clients]
