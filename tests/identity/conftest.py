"""Fixtures of the identity provider tests: an app with a user in a workspace, and a driver that
registers clients and walks the browser flow (login and consent forms) with the test client."""

from __future__ import annotations

import base64
import hashlib
import html
import json as _json
import os
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member
from tests.node_peers import installed
from tests.serve_process import ServeProcess

PASSWORD = "correct horse battery"
REDIRECT = "http://localhost:9999/callback"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def form_fields(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page)}


class Idp:
    redirect = REDIRECT
    password = PASSWORD
    pkce_pair = staticmethod(pkce_pair)
    query_of = staticmethod(query_of)
    form_fields = staticmethod(form_fields)

    def __init__(self, client, user: dict[str, Any], workspace: dict[str, Any]) -> None:
        self.http = client
        self.app = client.server.app
        self.user = user
        self.workspace = workspace

    async def register(self, **metadata: Any) -> dict[str, Any]:
        body = {
            "client_name": "Test app",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "openid profile email phone organization permissions offline_access",
            **metadata,
        }
        response = await self.http.post("/api/v1/oidc/register", json=body)
        assert response.status == 201, await response.text()
        return await response.json()

    async def operator_client(self, trust: str = "first_party", **metadata: Any) -> dict[str, Any]:
        """A client as the operator creates it (``patchbay clients create --first-party``/``--platform``)."""
        body = {
            "client_name": "Operator app",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "openid profile email phone organization permissions offline_access",
            **metadata,
        }
        async with self.app[SERVICES].db.transaction() as session:
            issued = await create_client(session, self.app[SERVICES].secrets, validate_metadata(body), trust=trust)
        return {"client_id": issued.row.client_id, "client_secret": issued.client_secret}

    async def authorize(self, client: dict[str, Any], **params: Any):
        query = {"client_id": client["client_id"], "redirect_uri": REDIRECT, "response_type": "code", "scope": "openid", "state": "st4te", **params}
        query = {key: value for key, value in query.items() if value is not None}
        return await self.http.get("/api/v1/oidc/authorize", params=query, allow_redirects=False)

    async def login(self, login_location: str, *, email: str | None = None, password: str = PASSWORD):
        page = await self.http.get(login_location)
        assert page.status == 200
        fields = form_fields(await page.text())
        return await self.http.post("/api/v1/oidc/login", data={**fields, "email": email or self.user["email"], "password": password}, allow_redirects=False)

    async def consent(self, consent_location: str, decision: str = "allow"):
        page = await self.http.get(consent_location)
        assert page.status == 200, await page.text()
        fields = form_fields(await page.text())
        return await self.http.post("/api/v1/oidc/consent", data={**fields, "decision": decision}, allow_redirects=False)

    async def code_for(self, client: dict[str, Any], **params: Any) -> tuple[str, str | None]:
        """Walk authorize -> login -> consent; the code and the PKCE verifier used."""
        verifier = None
        if "code_challenge" not in params:
            verifier, challenge = pkce_pair()
            params.update(code_challenge=challenge, code_challenge_method="S256")
        response = await self.authorize(client, **params)
        location = response.headers["Location"]
        if "/api/v1/oidc/login" in location:
            response = await self.login(location)
            location = response.headers["Location"]
        if "/api/v1/oidc/consent" in location:
            response = await self.consent(location)
            location = response.headers["Location"]
        answer = query_of(location)
        assert "code" in answer, location
        return answer["code"], verifier

    async def token(self, client: dict[str, Any], **form: Any):
        body = {"client_id": client["client_id"], **form}
        if client.get("client_secret"):
            body["client_secret"] = client["client_secret"]
        return await self.http.post("/api/v1/oidc/token", data={k: v for k, v in body.items() if v is not None})

    async def tokens(self, client: dict[str, Any], **params: Any) -> dict[str, Any]:
        code, verifier = await self.code_for(client, **params)
        response = await self.token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, code_verifier=verifier)
        assert response.status == 200, await response.text()
        return await response.json()


@pytest.fixture
def make_idp(aiohttp_client, make_app):
    """``await make_idp(**setting_overrides)`` -> an :class:`Idp` with a user (manager of a workspace)."""

    async def make(**overrides: Any) -> Idp:
        overrides.setdefault("rate_limits", {key: "off" for key in limits()})  # the rate-limit tests set their own
        app = make_app(**overrides)
        client = await aiohttp_client(app)
        workspace = await create_workspace_with_key(app)
        async with app[SERVICES].db.transaction() as session:
            user = await create_user(
                session, email="ada@example.com", password=PASSWORD, name="Ada Lovelace", phone_number="+44 20 7946 0000", user_type="customer_admin"
            )
            user.email_verified = True
            await add_member(session, workspace_id=workspace["workspace_id"], user_id=user.id, role="manager")
            user_info = {"id": user.id, "email": user.email}
        return Idp(client, user_info, workspace)

    return make


@pytest.fixture
async def idp(make_idp) -> Idp:
    return await make_idp()


def limits(**overrides: str) -> dict[str, str]:
    from patchbay.core.settings import RATE_LIMIT_DEFAULTS

    return {**RATE_LIMIT_DEFAULTS, **overrides}


# -- live server and Node.js peers ------------------------------------------------------------------


NODE_DIR = Path(__file__).parent / "node"
ARTIFACTS = Path(__file__).parents[1] / "artifacts"


class LiveServer(ServeProcess):
    """``patchbay serve`` on a free port, ready when made."""

    def __init__(self, data_dir: Path, extra_env: dict[str, str] | None = None, config: str | None = None) -> None:
        super().__init__(
            data_dir, {"PATCHBAY_SECRET_KEY": "live-test-secret", **(extra_env or {})}, config=config, log=data_dir.parent / f"serve-{data_dir.name}.log"
        )
        self.wait_ready(30)


async def _seed_user(url: str) -> tuple[str, str]:
    from patchbay.core.storage.db import Database
    from patchbay.core.workspaces.service import create_workspace

    db = Database(url)
    try:
        async with db.transaction() as session:
            workspace, _ = await create_workspace(session, name="Live")
            user = await create_user(session, email="live@example.com", password=PASSWORD, name="Live User")
            await add_member(session, workspace_id=workspace.id, user_id=user.id, role="admin")
            return workspace.id, user.id
    finally:
        await db.close()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """A live ``patchbay serve`` with a workspace and its admin user live@example.com (written
    straight into its database: the CLI is tested elsewhere and costs seconds per call). Shared by
    the tests of this folder: each registers its own clients."""
    import asyncio

    root = tmp_path_factory.mktemp("live-server")
    server = LiveServer(root / "live")
    workspace_id, user_id = asyncio.run(_seed_user(f"sqlite+aiosqlite:///{root / 'live' / 'patchbay.db'}"))
    server.workspace_id, server.user = workspace_id, {"id": user_id, "email": "live@example.com"}
    yield server
    server.stop()


@pytest.fixture(scope="session")
def node_peers() -> Path:
    """The npm packages of tests/identity/node, installed on first use; skips without npm."""
    return installed(NODE_DIR, "Node.js and npm are needed for the relying-party, browser and federation peers")


def run_node(script: str, env: dict[str, str], timeout: int = 120) -> dict:
    result = subprocess.run(["node", str(NODE_DIR / script)], env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout, cwd=NODE_DIR)
    assert result.returncode == 0, f"{script} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return _json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def node(node_peers):
    """``node(script, env)`` -> the JSON printed last by a script of tests/identity/node."""
    return run_node


@pytest.fixture
def start_server(tmp_path):
    """``start_server(name, extra_env=None, config=None)`` -> another live server, stopped after the test."""
    started = []

    def start(name: str, extra_env=None, config=None) -> LiveServer:
        server = LiveServer(tmp_path / name, extra_env, config)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def pkce():
    """PKCE pairs and the artifacts folder for the tests that run outside the aiohttp client."""

    class Helpers:
        pair = staticmethod(pkce_pair)
        artifacts = ARTIFACTS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return Helpers


async def _walk(http, url: str, stop_at: str, email: str | None = None, password: str | None = None) -> str:
    """A browser without JavaScript over a real ``aiohttp.ClientSession``: follow redirects, sign in
    and allow where a page asks, until a URL starting with ``stop_at``."""
    from urllib.parse import urljoin

    for _ in range(16):
        if url.startswith(stop_at):
            return url
        async with http.get(url, allow_redirects=False) as response:
            if response.status in (302, 303):
                url = urljoin(url, response.headers["Location"])
                continue
            page = await response.text()
        assert response.status == 200, (url, page[:300])
        path = urlsplit(url).path
        extra = {"email": email, "password": password} if path.endswith("/login") else {"decision": "allow"}
        async with http.post(urljoin(url, path), data={**form_fields(page), **extra}, allow_redirects=False) as response:
            assert response.status == 303, await response.text()
            url = urljoin(url, response.headers["Location"])
    raise AssertionError("too many redirects")


@pytest.fixture
def walk():
    """``await walk(http, url, stop_at, email=None, password=None)`` -> the URL reached."""
    return _walk
