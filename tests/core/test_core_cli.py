"""The administration CLI of contract section 3, against a real database."""

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from patchbay.cli.main import cli


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "cli-test-secret")
    monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    monkeypatch.delenv("PATCHBAY_CONFIG", raising=False)

    def invoke(*args: str, ok: bool = True):
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert (result.exit_code == 0) == ok, result.output
        return result

    return invoke


def rows(tmp_path, sql: str):
    engine = create_engine(f"sqlite:///{tmp_path / 'data' / 'patchbay.db'}")
    with engine.connect() as connection:
        return connection.execute(text(sql)).all()


def test_db_upgrade(run, tmp_path):
    assert "up to date (sqlite)" in run("db", "upgrade").output
    assert rows(tmp_path, "SELECT count(*) FROM alembic_version")[0][0] >= 1


def test_workspace_create_is_idempotent_by_external_id(run):
    first = json.loads(run("workspaces", "create", "--name", "Acme", "--plan", "starter", "--external-id", "ext-1", "--json").output)
    again = json.loads(run("workspaces", "create", "--name", "Other", "--external-id", "ext-1", "--json").output)
    assert first["plan"] == "starter" and first["created"] is True
    assert again["id"] == first["id"] and again["created"] is False
    assert "plan" in run("workspaces", "create", "--name", "X", "--plan", "gold", ok=False).output


def test_api_key_is_shown_once_and_stored_hashed(run, tmp_path):
    workspace = json.loads(run("workspaces", "create", "--name", "Acme", "--json").output)
    key = json.loads(run("api-keys", "create", "--workspace", workspace["id"], "--permission", "flows.view", "--json").output)
    assert key["key"].startswith("pb_") and key["permissions"] == ["flows.view"]
    stored = rows(tmp_path, "SELECT key_digest, prefix FROM api_keys")
    assert key["key"] not in {value for row in stored for value in row}
    assert "unknown permission" in run("api-keys", "create", "--workspace", workspace["id"], "--permission", "nope", ok=False).output
    assert "no workspace" in run("api-keys", "create", "--workspace", "missing", ok=False).output


@pytest.mark.slow  # argon2 hashing in CLI processes
def test_user_with_membership_and_argon2_hash(run, tmp_path):
    workspace = json.loads(run("workspaces", "create", "--name", "Acme", "--json").output)
    user = json.loads(
        run(
            "users",
            "create",
            "--email",
            "Ada@Example.com",
            "--password",
            "correct horse",
            "--name",
            "Ada Lovelace",
            "--workspace",
            workspace["id"],
            "--role",
            "manager",
            "--json",
        ).output
    )
    assert user["email"] == "ada@example.com" and user["role"] == "manager"
    [(password_hash, given, family)] = rows(tmp_path, "SELECT password_hash, given_name, family_name FROM users")
    assert password_hash.startswith("$argon2id$") and (given, family) == ("Ada", "Lovelace")
    assert rows(tmp_path, "SELECT role FROM memberships") == [("manager",)]
    assert "already exists" in run("users", "create", "--email", "ada@example.com", "--password", "another one", ok=False).output


def test_keys_rotate_keeps_previous_in_jwks(run):
    first = json.loads(run("keys", "rotate", "--json").output)
    second = json.loads(run("keys", "rotate", "--json").output)
    assert {k["kid"] for k in second["jwks"]["keys"]} == {first["kid"], second["kid"]}
    assert all(k["alg"] == "RS256" and k["use"] == "sig" and "d" not in k for k in second["jwks"]["keys"])


@pytest.mark.slow  # about 3 s (setup and call)
def test_providers_list(run):
    listed = json.loads(run("providers", "list", "--json").output)
    assert len(listed) >= 3 and all({"name", "displayName", "category"} <= set(p) for p in listed)
    crm = json.loads(run("providers", "list", "--category", "crm", "--json").output)
    assert crm and all("crm" in p["categories"] for p in crm)


def test_bad_setting_is_a_clear_error(run, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATABASE_URL", "mysql://nope")
    result = run("db", "upgrade", ok=False)
    assert "invalid setting: PATCHBAY_DATABASE_URL" in result.output


def js(*args: str):
    """Run a command with ``--json`` (the caller's last argument) and answer its parsed output."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.slow  # about 4 s (setup and call)
def test_workspaces_list_show_delete(run):
    first = js("workspaces", "create", "--name", "First", "--json")
    second = js("workspaces", "create", "--name", "Second", "--plan", "starter", "--json")
    js("users", "create", "--email", "a@example.com", "--password", "long-enough-1", "--workspace", first["id"], "--json")
    listed = js("workspaces", "list", "--json")
    assert [(w["name"], w["plan"], w["members"]) for w in listed] == [("First", "enterprise", 1), ("Second", "starter", 0)]  # default_plan: enterprise
    assert js("workspaces", "show", second["id"], "--json")["name"] == "Second"

    refused = CliRunner().invoke(cli, ["workspaces", "delete", first["id"]], input="n\n")
    assert "Aborted" in refused.output
    assert len(js("workspaces", "list", "--json")) == 2
    assert js("workspaces", "delete", first["id"], "--yes", "--json") == {"id": first["id"], "deleted": True}
    assert [w["name"] for w in js("workspaces", "list", "--json")] == ["Second"]
    assert "no workspace with id" in run("workspaces", "show", first["id"], ok=False).output
    assert js("users", "show", "a@example.com", "--json")["memberships"] == []


def test_users_list_show_delete(run):
    workspace = js("workspaces", "create", "--name", "Team", "--json")
    user = js("users", "create", "--email", "Person@Example.com", "--password", "long-enough-1", "--workspace", workspace["id"], "--role", "viewer", "--json")
    assert [u["email"] for u in js("users", "list", "--json")] == ["person@example.com"]
    shown = js("users", "show", user["id"], "--json")
    assert shown["memberships"] == [{"workspaceId": workspace["id"], "name": "Team", "role": "viewer"}]
    assert js("users", "show", "PERSON@example.com", "--json")["id"] == user["id"]
    assert js("users", "delete", "person@example.com", "--yes", "--json")["deleted"] is True
    assert js("users", "list", "--json") == []
    assert js("workspaces", "show", workspace["id"], "--json")["members"] == 0
    assert "no user" in run("users", "delete", "nobody@example.com", "--yes", ok=False).output


def test_api_keys_list_revoke_and_expiry(run):
    workspace = json.loads(run("workspaces", "create", "--name", "Acme", "--json").output)
    expiring = json.loads(run("api-keys", "create", "--workspace", workspace["id"], "--expires-in", "30d", "--json").output)
    forever = json.loads(run("api-keys", "create", "--workspace", workspace["id"], "--json").output)
    assert expiring["expiresAt"] and forever["expiresAt"] is None
    assert "positive duration" in run("api-keys", "create", "--workspace", workspace["id"], "--expires-in", "soon", ok=False).output

    listing = run("api-keys", "list", "--workspace", workspace["id"], "--json").output
    assert {k["id"] for k in json.loads(listing)} == {expiring["id"], forever["id"]}
    assert expiring["key"] not in listing and forever["key"] not in listing

    assert json.loads(run("api-keys", "revoke", forever["id"], "--json").output)["revoked"] is True
    statuses = {k["id"]: k["status"] for k in json.loads(run("api-keys", "list", "--workspace", workspace["id"], "--json").output)}
    assert statuses == {expiring["id"]: "active", forever["id"]: "revoked"}
    assert "no active API key" in run("api-keys", "revoke", forever["id"], ok=False).output


def test_api_keys_show_and_delete(run):
    workspace = js("workspaces", "create", "--name", "Keys", "--json")
    key = js("api-keys", "create", "--workspace", workspace["id"], "--name", "ci", "--json")
    shown = js("api-keys", "show", key["id"], "--json")
    assert shown["name"] == "ci" and shown["status"] == "active" and "key" not in shown
    js("api-keys", "revoke", key["id"], "--json")
    assert js("api-keys", "show", key["id"], "--json")["status"] == "revoked"
    assert "Aborted" in CliRunner().invoke(cli, ["api-keys", "delete", key["id"]], input="n\n").output
    assert js("api-keys", "delete", key["id"], "--yes", "--json") == {"id": key["id"], "deleted": True}
    assert js("api-keys", "list", "--workspace", workspace["id"], "--json") == []
    assert "no API key with id" in run("api-keys", "show", key["id"], ok=False).output


def test_clients_list_show_delete(run, tmp_path):
    workspace = js("workspaces", "create", "--name", "Apps", "--json")
    web_app = js("clients", "create", "--name", "Web app", "--redirect-uri", "https://app.example.com/cb", "--json")
    machine = js(
        "clients",
        "create",
        "--name",
        "Machine",
        "--redirect-uri",
        "https://m.example.com/cb",
        "--grant-type",
        "client_credentials",
        "--workspace",
        workspace["id"],
        "--json",
    )
    # letters and digits only: an id starting with "-" would read as an option below
    assert web_app["client_id"].isalnum() and machine["client_id"].isalnum()
    listed = js("clients", "list", "--json")
    assert [c["client_name"] for c in listed] == ["Machine", "Web app"]
    assert all("client_secret" not in c and "secret_digest" not in c for c in listed)
    assert [c["client_id"] for c in js("clients", "list", "--workspace", workspace["id"], "--json")] == [machine["client_id"]]
    shown = js("clients", "show", web_app["client_id"], "--json")
    assert shown["redirect_uris"] == ["https://app.example.com/cb"] and shown["trust"] == "third_party"
    assert js("clients", "delete", web_app["client_id"], "--yes", "--json") == {"client_id": web_app["client_id"], "deleted": True}
    assert rows(tmp_path, f"SELECT count(*) FROM oidc_clients WHERE client_id = '{web_app['client_id']}'") == [(0,)]
    assert "no client with id" in run("clients", "show", web_app["client_id"], ok=False).output
    assert "no client with id" in run("clients", "delete", web_app["client_id"], "--yes", ok=False).output
