"""``patchbay clients``: register, list, show, delete OIDC clients and rotate their secrets from the
command line (contract section 3)."""

from __future__ import annotations

import click
from sqlalchemy import delete, select

from patchbay.cli.runtime import confirm_delete, emit, json_option, run_with_database
from patchbay.core.identity.clients import AUTH_METHODS, DEFAULT_SCOPE, GRANT_TYPES, ClientConflict, ClientMetadataError, create_client, validate_metadata
from patchbay.core.identity.models import OidcClient
from patchbay.core.security.permissions import PERMISSIONS
from patchbay.core.security.secrets import random_token
from patchbay.core.workspaces.models import Workspace


@click.group("clients")
def clients() -> None:
    """OAuth / OpenID Connect clients of the identity provider."""


@clients.command("create")
@click.option("--name", required=True, help="Shown on the consent page.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True, help="Repeat for each; exact match.")
@click.option("--grant-type", "grant_types", multiple=True, type=click.Choice(GRANT_TYPES), help="Repeat; default authorization_code.")
@click.option("--auth-method", type=click.Choice(AUTH_METHODS), default="client_secret_post", show_default=True)
@click.option("--scope", default=DEFAULT_SCOPE, show_default=True, help="Space-separated scopes the client may request.")
@click.option("--workspace", "workspace_id", help="Bind a client_credentials client to this workspace (its tokens open the connect API).")
@click.option("--permission", "permissions", multiple=True, type=click.Choice(PERMISSIONS), help="With --workspace: restrict its tokens (default: admin).")
@click.option("--no-require-pkce", is_flag=True, help="Let a confidential client skip PKCE.")
@click.option("--platform", "trust", flag_value="platform", help="Trust it with the platform REST API (organizations, users).")
@click.option("--first-party", "trust", flag_value="first_party", help="One of the operator's own apps: its user tokens open the connect API.")
@json_option
def clients_create(name, redirect_uris, grant_types, auth_method, scope, workspace_id, permissions, no_require_pkce, trust, as_json) -> None:
    """Register a client; the secret is shown once. Without --platform or --first-party it is a
    third-party client, like one registered at /api/v1/oidc/register."""
    raw = {
        "client_name": name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types) or ["authorization_code"],
        "token_endpoint_auth_method": auth_method,
        "scope": scope,
        "require_pkce": not no_require_pkce,
        "permissions": list(permissions) or None,
    }
    try:
        metadata = validate_metadata(raw)
    except ClientMetadataError as error:
        raise click.ClickException(str(error)) from None
    if permissions and not workspace_id:
        raise click.ClickException("--permission needs --workspace")

    async def work(_settings, db, box):
        async with db.transaction() as session:
            if workspace_id and await session.get(Workspace, workspace_id) is None:
                raise click.ClickException(f"no workspace with id {workspace_id}")
            try:
                issued = await create_client(session, box, metadata, workspace_id=workspace_id, trust=trust or "third_party")
            except ClientConflict as error:
                raise click.ClickException(str(error)) from None
            return issued.registration_response()

    data = run_with_database(work)
    data["trust"] = trust or "third_party"
    secret = f"\nclient_secret: {data['client_secret']}\n(it is not shown again)" if "client_secret" in data else ""
    emit(data, as_json, f"client_id: {data['client_id']}{secret}")


@clients.command("rotate-secret")
@click.option("--client-id", required=True)
@json_option
def clients_rotate_secret(client_id: str, as_json: bool) -> None:
    """Give a confidential client a new secret (shown once); the old one stops working at once
    (running servers may accept it for up to 10 more seconds, the life of their client cache)."""

    async def work(_settings, db, box):
        async with db.transaction() as session:
            row = await session.get(OidcClient, client_id)
            if row is None:
                raise click.ClickException(f"no client with id {client_id}")
            if row.token_endpoint_auth_method == "none":
                raise click.ClickException("a public client has no secret")
            secret = random_token(32)
            row.secret_digest = box.digest(secret)
            return {"client_id": client_id, "client_secret": secret, "client_secret_expires_at": 0}

    data = run_with_database(work)
    emit(data, as_json, f"client_secret: {data['client_secret']}\n(it is not shown again)")


def _client_json(row: OidcClient) -> dict:
    """A registered client as the operator sees it: never its secret (nor the secret's digest)."""
    return {
        "client_id": row.client_id,
        "client_name": row.client_name,
        "trust": row.trust,
        "redirect_uris": list(row.redirect_uris),
        "grant_types": list(row.grant_types),
        "token_endpoint_auth_method": row.token_endpoint_auth_method,
        "scope": row.scope,
        "require_pkce": row.require_pkce,
        "workspaceId": row.workspace_id,
        "permissions": row.permissions,
    }


@clients.command("list")
@click.option("--workspace", "workspace_id", help="Only the clients bound to this workspace.")
@json_option
def clients_list(workspace_id: str | None, as_json: bool) -> None:
    """List registered clients (without their secrets)."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            statement = select(OidcClient).order_by(OidcClient.client_name, OidcClient.client_id)
            if workspace_id:
                statement = statement.where(OidcClient.workspace_id == workspace_id)
            return [_client_json(row) for row in await session.scalars(statement)]

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{c['client_id']}  {c['trust']:<12} {c['client_name']}" for c in data) or "no clients")


@clients.command("show")
@click.argument("client_id")
@json_option
def clients_show(client_id: str, as_json: bool) -> None:
    """Show one client (without its secret)."""

    async def work(_settings, db, _box):
        async with db.session() as session:
            row = await session.get(OidcClient, client_id)
            if row is None:
                raise click.ClickException(f"no client with id {client_id}")
            return _client_json(row)

    data = run_with_database(work)
    emit(data, as_json, "\n".join(f"{key}: {value}" for key, value in data.items()))


@clients.command("delete")
@click.argument("client_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def clients_delete(client_id: str, yes: bool, as_json: bool) -> None:
    """Delete a client: its grants, codes and tokens go with it (running servers may accept it for
    up to 10 more seconds, the life of their client cache)."""
    confirm_delete(yes, f"client {client_id} with its grants and tokens")

    async def work(_settings, db, _box):
        async with db.transaction() as session:
            if (await session.execute(delete(OidcClient).where(OidcClient.client_id == client_id))).rowcount == 0:
                raise click.ClickException(f"no client with id {client_id}")
            return {"client_id": client_id, "deleted": True}

    data = run_with_database(work)
    emit(data, as_json, f"client {client_id} deleted")
