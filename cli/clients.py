"""``patchbay clients create``: register an OIDC client from the command line (contract section 3)."""

from __future__ import annotations

import click

from patchbay.cli.runtime import emit, json_option, run_with_database
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
@json_option
def clients_create(name, redirect_uris, grant_types, auth_method, scope, workspace_id, permissions, no_require_pkce, as_json) -> None:
    """Register a client; the secret is shown once."""
    raw = {"client_name": name, "redirect_uris": list(redirect_uris), "grant_types": list(grant_types) or ["authorization_code"],
           "token_endpoint_auth_method": auth_method, "scope": scope, "require_pkce": not no_require_pkce,
           "permissions": list(permissions) or None}  # fmt: skip
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
                issued = await create_client(session, box, metadata, workspace_id=workspace_id)
            except ClientConflict as error:
                raise click.ClickException(str(error)) from None
            return issued.registration_response()

    data = run_with_database(work)
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
