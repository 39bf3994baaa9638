"""Clients known by a Client ID Metadata Document: an https URL as ``client_id``, fetched through the
outbound guard, checked, kept as its Cache-Control says (within bounds), its redirect URIs enforced.

The app runs with the production outbound policy (https, public addresses only) where, as in
tests/attacker/test_attacker_outbound.py, 127.0.0.2 plays a public host with a certificate of a test
CA, and 127.0.0.1 the private network: the refusal of a private address is the real one."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.metadata_documents import MAX_CACHE_SECONDS, MIN_CACHE_SECONDS, cache_seconds, row_id
from patchbay.core.mcp.grants import active_grant
from patchbay.core.settings import IdentitySettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member
from tests.attacker.test_attacker_outbound import PRIVATE, PUBLIC, make_tls, strict_outbound
from tests.identity.conftest import PASSWORD, REDIRECT, Idp, limits
from tests.identity.mcp_flow import AGENT_SCOPE, add_connection, agent_code, claims_of, resource_of


@pytest.fixture
def tls(tmp_path):
    return make_tls(tmp_path)


class DocumentHost:
    """An https server (on 127.0.0.2, or another address) answering one metadata document, counting hits."""

    def __init__(self, tls, host: str = PUBLIC) -> None:
        self.tls, self.host = tls, host
        self.hits = 0
        self.document: dict[str, Any] | None = None
        self.headers: dict[str, str] = {"Cache-Control": "max-age=3600"}
        self.status = 200

    async def start(self) -> DocumentHost:
        app = web.Application()
        app.router.add_get("/agents/claude.json", self.serve)
        self.server = TestServer(app, host=self.host, scheme="https")
        await self.server.start_server(ssl=self.tls[0])
        self.url = f"https://{self.host}:{self.server.port}/agents/claude.json"
        self.document = {
            "client_id": self.url,
            "client_name": "Claude (by document)",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
        }
        return self

    async def serve(self, request: web.Request) -> web.Response:
        self.hits += 1
        if self.status != 200:
            return web.Response(status=self.status, headers={"Location": "https://example.com/"})
        return web.json_response(self.document, headers=self.headers)


@pytest.fixture
async def hosts(tls):
    started: list[DocumentHost] = []

    async def start(host: str = PUBLIC) -> DocumentHost:
        started.append(await DocumentHost(tls, host).start())
        return started[-1]

    yield start
    for host in started:
        await host.server.close()


@pytest.fixture
def strict_idp(aiohttp_client, make_app, tls):
    """``await strict_idp(**settings)`` -> an :class:`Idp` whose outbound calls follow the production policy."""

    async def make(**overrides: Any) -> Idp:
        app = make_app(allow_insecure_targets=False, rate_limits={key: "off" for key in limits()}, **overrides)
        app[SERVICES].outbound = strict_outbound(tls[1])
        client = await aiohttp_client(app)
        workspace = await create_workspace_with_key(app)
        async with app[SERVICES].db.transaction() as session:
            user = await create_user(session, email="ada@example.com", password=PASSWORD, name="Ada Lovelace")
            user.email_verified = True
            await add_member(session, workspace_id=workspace["workspace_id"], user_id=user.id, role="manager")
            user_info = {"id": user.id, "email": user.email}
        return Idp(client, user_info, workspace)

    return make


async def authorize(idp: Idp, client_id: str, **params: Any):
    verifier, challenge = idp.pkce_pair()
    query = {"resource": resource_of(idp), "scope": AGENT_SCOPE, "code_challenge": challenge, "code_challenge_method": "S256", **params}
    return await idp.authorize({"client_id": client_id}, **query)


async def test_an_agent_known_by_its_metadata_document_gets_an_mcp_token(strict_idp, hosts):
    idp = await strict_idp()
    host = await hosts()
    connection = await add_connection(idp.app, idp.workspace["workspace_id"])
    client = {"client_id": host.url}
    response = await authorize(idp, host.url)
    login = await idp.login(response.headers["Location"])
    page = await (await idp.http.get(login.headers["Location"])).text()
    assert "Claude (by document)" in page and PUBLIC in page and 'id="unverified-agent"' in page
    answer, verifier = await agent_code(idp, client)
    tokens = await idp.token(
        client, grant_type="authorization_code", code=answer["code"], redirect_uri=REDIRECT, code_verifier=verifier, resource=resource_of(idp)
    )
    assert tokens.status == 200, await tokens.text()
    body = await tokens.json()
    claims = await claims_of(idp, body["access_token"])
    assert claims["client_id"] == host.url and claims["aud"] == resource_of(idp)
    grant = await active_grant(idp.app[SERVICES], claims["grant_id"])
    assert grant.client_id == host.url and grant.connection_ids == (connection,)
    rotated = await idp.token(client, grant_type="refresh_token", refresh_token=body["refresh_token"], resource=resource_of(idp))
    assert rotated.status == 200 and (await rotated.json())["refresh_token"] != body["refresh_token"]


async def test_a_metadata_document_on_a_private_address_is_refused(strict_idp, hosts):
    idp = await strict_idp()
    private = await hosts(PRIVATE)
    for url in (private.url, private.url.replace(PRIVATE, "localhost"), f"https://[::1]:{private.server.port}/agents/claude.json"):
        response = await authorize(idp, url)
        assert response.status == 400, url
        body = await response.json()
        assert body["error"] == "invalid_client" and ("private" in body["error_description"] or "public" in body["error_description"]), body
    assert private.hits == 0


async def test_a_metadata_document_that_redirects_is_not_followed(strict_idp, hosts):
    idp = await strict_idp()
    host = await hosts()
    host.status = 302
    response = await authorize(idp, host.url)
    assert response.status == 400 and (await response.json())["error"] == "invalid_client"


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"client_id": "https://someone-else.example/claude.json"}, "client_id"),
        ({"client_secret": "s3cret"}, "secret"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "public"),
        ({"redirect_uris": None}, "redirect_uris"),
        ({"client_name": None}, "client_name"),
        ({"redirect_uris": ["http://attacker.example/cb"]}, "https"),
    ],
)
async def test_a_metadata_document_must_be_valid(strict_idp, hosts, change, problem):
    idp = await strict_idp()
    host = await hosts()
    host.document = {key: value for key, value in {**host.document, **change}.items() if value is not None}
    response = await authorize(idp, host.url)
    assert response.status == 400
    body = await response.json()
    assert body["error"] == "invalid_client" and problem in body["error_description"], body


async def test_the_redirect_uris_of_the_document_are_enforced(strict_idp, hosts):
    idp = await strict_idp()
    host = await hosts()
    response = await authorize(idp, host.url, redirect_uri="http://localhost:9999/elsewhere")
    assert response.status == 400 and (await response.json())["error"] == "invalid_request"
    assert "Location" not in response.headers


@pytest.mark.parametrize(
    "client_id",
    ["https://127.0.0.2/", "https://127.0.0.2", "https://127.0.0.2/a#b", "https://user:pw@127.0.0.2/a.json", "https://127.0.0.2/a/../b.json"],
)
async def test_a_client_id_url_is_held_to_the_drafts_rules(strict_idp, client_id):
    idp = await strict_idp()
    response = await authorize(idp, client_id)
    assert response.status == 400 and (await response.json())["error"] == "invalid_client"


async def test_the_document_is_kept_as_its_cache_control_allows(strict_idp, hosts):
    idp = await strict_idp()
    host = await hosts()
    for _ in range(3):
        assert (await authorize(idp, host.url)).status == 302
    assert host.hits == 1
    host.headers = {"Cache-Control": "no-store"}  # a second agent: kept the least time, but kept
    other = await hosts()
    other.headers = {"Cache-Control": "no-store"}
    for _ in range(2):
        assert (await authorize(idp, other.url)).status == 302
    assert other.hits == 1


def test_cache_control_is_respected_within_bounds():
    assert cache_seconds("max-age=3600") == 3600
    assert cache_seconds("public, max-age=5") == MIN_CACHE_SECONDS
    assert cache_seconds("max-age=999999999") == MAX_CACHE_SECONDS
    assert cache_seconds("no-store") == cache_seconds("no-cache, max-age=3600") == MIN_CACHE_SECONDS
    assert MIN_CACHE_SECONDS < cache_seconds(None) < MAX_CACHE_SECONDS


async def test_an_agent_the_operator_vouched_for_by_host_is_shown_verified(strict_idp, hosts):
    idp = await strict_idp(identity=IdentitySettings(trusted_agents=[PUBLIC]))
    host = await hosts()
    await add_connection(idp.app, idp.workspace["workspace_id"])
    response = await authorize(idp, host.url)
    login = await idp.login(response.headers["Location"])
    page = await (await idp.http.get(login.headers["Location"])).text()
    assert 'id="agent-verified"' in page and 'id="unverified-agent"' not in page


async def test_a_registration_cannot_take_the_place_of_a_documents_client(idp):
    """A document's client is stored under a name derived from its URL: registering that name first
    would keep the agent out."""
    body = {"client_name": "Squatter", "redirect_uris": [REDIRECT], "application": row_id("https://agent.example/claude.json")}
    response = await idp.http.post("/api/v1/oidc/register", json=body)
    assert response.status == 400 and (await response.json())["error"] == "invalid_client_metadata"
