"""Dynamic registration (RFC 7591, 2.15) and ``patchbay clients create``."""

import json

from click.testing import CliRunner
from sqlalchemy import select

from patchbay.cli.main import cli
from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.models import OidcClient

REDIRECT = "http://localhost:9999/callback"


async def test_register_answers_201_with_the_secret_once_and_stores_a_digest(idp):
    response = await idp.http.post(
        "/api/v1/oidc/register",
        json={
            "client_name": "Shop",
            "redirect_uris": ["https://shop.example/cb"],
            "client_uri": "https://shop.example",
            "logo_uri": "https://shop.example/logo.png",
        },
    )
    assert response.status == 201
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    for field in (
        "client_id",
        "client_secret",
        "client_secret_expires_at",
        "client_name",
        "redirect_uris",
        "grant_types",
        "token_endpoint_auth_method",
        "scope",
        "client_uri",
        "logo_uri",
    ):
        assert field in body, field
    assert body["client_secret_expires_at"] == 0
    assert body["grant_types"] == ["authorization_code"]
    assert body["token_endpoint_auth_method"] == "client_secret_post"
    assert body["scope"] == "openid profile email"
    assert body["require_pkce"] is True
    assert body["application"]
    async with idp.app[SERVICES].db.session() as session:
        row = await session.get(OidcClient, body["client_id"])
        raw = json.dumps({c.name: str(getattr(row, c.key, "")) for c in OidcClient.__table__.columns})
    assert body["client_secret"] not in raw
    assert row.secret_digest and len(row.secret_digest) == 64


async def test_public_client_gets_no_secret_must_use_pkce_and_no_client_credentials(idp):
    body = await idp.register(token_endpoint_auth_method="none", require_pkce=False)
    assert "client_secret" not in body
    assert body["require_pkce"] is True
    assert body["refresh_token_rotation"] is True
    response = await idp.http.post(
        "/api/v1/oidc/register",
        json={"client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "grant_types": ["client_credentials"]},
    )
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_client_metadata"


async def test_registration_validation_errors(idp):
    cases = [
        ({"redirect_uris": [REDIRECT]}, "invalid_client_metadata"),
        ({"client_name": "x"}, "invalid_redirect_uri"),
        ({"client_name": "x", "redirect_uris": ["http://shop.example/cb"]}, "invalid_redirect_uri"),
        ({"client_name": "x", "redirect_uris": ["https://shop.example/*"]}, "invalid_redirect_uri"),
        ({"client_name": "x", "redirect_uris": [REDIRECT], "grant_types": ["password"]}, "invalid_client_metadata"),
        ({"client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        ({"client_name": "x", "redirect_uris": [REDIRECT], "scope": "openid address"}, "invalid_client_metadata"),
    ]
    for body, error in cases:
        response = await idp.http.post("/api/v1/oidc/register", json=body)
        assert response.status == 400, body
        answer = await response.json()
        assert answer["error"] == error, (body, answer)
        assert answer["error_description"]
    ok = await idp.http.post("/api/v1/oidc/register", json={"client_name": "x", "redirect_uris": ["http://127.0.0.1:5000/cb"]})
    assert ok.status == 201


async def test_application_identifier_is_unique(idp):
    await idp.register(application="billing-app")
    response = await idp.http.post("/api/v1/oidc/register", json={"client_name": "x", "redirect_uris": [REDIRECT], "application": "billing-app"})
    assert response.status == 400


def test_cli_creates_a_workspace_client_whose_tokens_open_the_connect_api(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "cli-secret")
    runner = CliRunner()
    workspace = json.loads(runner.invoke(cli, ["workspaces", "create", "--name", "Acme", "--json"]).output)
    result = runner.invoke(
        cli,
        [
            "clients",
            "create",
            "--name",
            "Backend",
            "--redirect-uri",
            "https://acme.example/cb",
            "--grant-type",
            "client_credentials",
            "--workspace",
            workspace["id"],
            "--permission",
            "flows.view",
            "--platform",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["client_secret"] and body["workspace_id"] == workspace["id"] and body["trust"] == "platform"
    plain = json.loads(runner.invoke(cli, ["clients", "create", "--name", "Plain", "--redirect-uri", "https://acme.example/cb", "--json"]).output)
    assert plain["trust"] == "third_party"
    bad = runner.invoke(cli, ["clients", "create", "--name", "x", "--redirect-uri", "http://evil.example/cb"])
    assert bad.exit_code != 0 and "https" in bad.output

    import asyncio

    from patchbay.core.storage.db import Database

    async def read():
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'patchbay.db'}")
        async with db.session() as session:
            row = await session.scalar(select(OidcClient).where(OidcClient.client_id == body["client_id"]))
        await db.close()
        return row

    row = asyncio.run(read())
    assert row.workspace_id == workspace["id"] and row.permissions == ["flows.view"] and row.trust == "platform"
    rotated = json.loads(runner.invoke(cli, ["clients", "rotate-secret", "--client-id", body["client_id"], "--json"]).output)
    assert rotated["client_secret"] != body["client_secret"]
    row = asyncio.run(read())
    from patchbay.core.security.secrets import SecretBox

    assert row.secret_digest == SecretBox(["cli-secret"]).digest(rotated["client_secret"])
