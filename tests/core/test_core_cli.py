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


def test_user_with_membership_and_argon2_hash(run, tmp_path):
    workspace = json.loads(run("workspaces", "create", "--name", "Acme", "--json").output)
    user = json.loads(run("users", "create", "--email", "Ada@Example.com", "--password", "correct horse", "--name", "Ada Lovelace",
                          "--workspace", workspace["id"], "--role", "manager", "--json").output)  # fmt: skip
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


def test_providers_list(run):
    listed = json.loads(run("providers", "list", "--json").output)
    assert len(listed) >= 3 and all({"name", "displayName", "category"} <= set(p) for p in listed)
    crm = json.loads(run("providers", "list", "--category", "crm", "--json").output)
    assert crm and all("crm" in p["categories"] for p in crm)


def test_bad_setting_is_a_clear_error(run, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATABASE_URL", "mysql://nope")
    result = run("db", "upgrade", ok=False)
    assert "invalid setting: PATCHBAY_DATABASE_URL" in result.output
