"""Administration commands of contract section 3; each prints JSON with ``--json``."""

from __future__ import annotations

import click
from sqlalchemy import select

from patchbay.cli.clients import clients
from patchbay.cli.runtime import emit, json_option, run_with_database
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import load_registry
from patchbay.core.security.api_keys import UnknownPermission, create_api_key
from patchbay.core.security.signing_keys import SigningKeys
from patchbay.core.timeutil import iso
from patchbay.core.users.service import UserError, create_user
from patchbay.core.workspaces.models import PLANS, ROLES, Workspace
from patchbay.core.workspaces.service import WorkspaceError, add_member, create_workspace


def _fail(error: Exception) -> click.ClickException:
    return click.ClickException(str(error))


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
@click.option("--plan", type=click.Choice(PLANS), default="free", show_default=True)
@click.option("--external-id", help="Your own id for it; creating it again answers the same workspace.")
@json_option
def workspaces_create(name: str, plan: str, external_id: str | None, as_json: bool) -> None:
    """Create a workspace."""

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            try:
                workspace, created = await create_workspace(session, name=name, plan=plan, external_id=external_id)
            except WorkspaceError as error:
                raise _fail(error) from None
            return {"id": workspace.id, "name": workspace.name, "slug": workspace.slug, "plan": workspace.plan,
                    "externalId": workspace.external_id, "created": created, "createdAt": iso(workspace.created_at)}  # fmt: skip

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


# -- API keys -------------------------------------------------------------------------------------


@click.group("api-keys")
def api_keys() -> None:
    """API keys for the x-api-key header."""


@api_keys.command("create")
@click.option("--workspace", "workspace_id", required=True)
@click.option("--name", default="default", show_default=True)
@click.option("--permission", "permissions", multiple=True, help="Repeat for each; default: every permission.")
@json_option
def api_keys_create(workspace_id: str, name: str, permissions: tuple[str, ...], as_json: bool) -> None:
    """Create an API key; the key is shown once."""

    async def work(_settings, db, box):
        async with db.transaction() as session:
            await _require_workspace(session, workspace_id)
            try:
                issued = await create_api_key(session, box, workspace_id=workspace_id, name=name, permissions=list(permissions))
            except UnknownPermission as error:
                raise _fail(error) from None
            return {"id": issued.record.id, "key": issued.key, "prefix": issued.record.prefix, "workspaceId": workspace_id,
                    "name": name, "permissions": issued.record.permissions}  # fmt: skip

    data = run_with_database(work)
    emit(data, as_json, f"API key {data['id']} for workspace {workspace_id}:\n{data['key']}\n(it is not shown again)")


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
@json_option
def users_create(email: str, password: str, name: str | None, workspace_id: str | None, role: str, as_json: bool) -> None:
    """Create a user, optionally a member of a workspace."""

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            if workspace_id:
                await _require_workspace(session, workspace_id)
            try:
                user = await create_user(session, email=email, password=password, name=name)
            except UserError as error:
                raise _fail(error) from None
            if workspace_id:
                await add_member(session, workspace_id=workspace_id, user_id=user.id, role=role)
            return {"id": user.id, "email": user.email, "name": user.name, "workspaceId": workspace_id, "role": role if workspace_id else None}

    data = run_with_database(work)
    emit(data, as_json, f"user {data['id']} ({data['email']})")


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
    from patchbay.cli.runtime import settings_from
    from patchbay.core.http.providers import provider_json

    registry = load_registry(create_plugin_manager(), settings_from().providers)
    found = sorted(registry.providers.values(), key=lambda p: p.name)
    if category:
        found = [p for p in found if category in p.all_categories]
    data = [provider_json(p) for p in found]
    emit(data, as_json, "\n".join(f"{p['name']:<32} {p['category']:<16} {p['authMode']}" for p in data) or "no providers")


COMMANDS = [workspaces, api_keys, users, keys, providers, clients]
