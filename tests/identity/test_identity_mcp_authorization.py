"""An agent's authorization for the MCP server, over HTTP: discovery (RFC 9728, RFC 8414), resource
indicators (RFC 8707), PKCE, ``iss`` in every authorization response (RFC 9207), refresh-token
rotation, and the agent consent page (who the agent is, the workspace, the connections) whose
choice becomes the grant the token names."""

from __future__ import annotations

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.clients import create_client, validate_metadata
from patchbay.core.identity.http import CORS_HEADERS
from patchbay.core.mcp.grants import active_grant
from patchbay.core.workspaces.service import add_member, create_workspace
from tests.identity.mcp_flow import AGENT_SCOPE, add_connection, agent_code, agent_tokens, checkboxes, claims_of, consent, resource_of

AGENT = {"client_name": "Claude", "token_endpoint_auth_method": "none", "scope": AGENT_SCOPE}


def issuer_of(idp) -> str:
    return idp.app[SERVICES].settings.resolved_issuer


# -- discovery -------------------------------------------------------------------------------------


async def test_protected_resource_metadata_names_the_mcp_server_and_this_issuer(idp):
    response = await idp.http.get("/.well-known/oauth-protected-resource/mcp")
    assert response.status == 200
    for name, value in CORS_HEADERS.items():
        assert response.headers[name] == value
    assert await response.json() == {
        "resource": resource_of(idp),
        "authorization_servers": [issuer_of(idp)],
        "scopes_supported": ["mcp", "offline_access"],
        "bearer_methods_supported": ["header"],
        "resource_name": "patchbay MCP server",
    }


async def test_authorization_server_metadata_says_what_mcp_clients_need(idp):
    response = await idp.http.get("/.well-known/oauth-authorization-server")
    assert response.status == 200
    document = await response.json()
    assert document == await (await idp.http.get("/.well-known/openid-configuration")).json()
    assert document["issuer"] == issuer_of(idp)
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["registration_endpoint"] == issuer_of(idp) + "/api/v1/oidc/register"
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["client_id_metadata_document_supported"] is True
    assert "mcp" in document["scopes_supported"] and "none" in document["token_endpoint_auth_methods_supported"]


# -- the token -------------------------------------------------------------------------------------


async def test_an_agents_token_is_for_the_mcp_server_and_names_the_grant_the_user_chose(idp):
    workspace_id = idp.workspace["workspace_id"]
    chosen = await add_connection(idp.app, workspace_id, "acme")
    await add_connection(idp.app, workspace_id, "other")
    client = await idp.register(**AGENT)
    answer, verifier = await agent_code(idp, client, connections=[chosen])
    assert answer["iss"] == issuer_of(idp) and answer["state"] == "st4te"  # RFC 9207
    response = await idp.token(
        client, grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier, resource=resource_of(idp)
    )
    assert response.status == 200, await response.text()
    tokens = await response.json()
    claims = await claims_of(idp, tokens["access_token"])
    assert claims["aud"] == resource_of(idp)
    assert claims["client_id"] == client["client_id"] and claims["sub"] == idp.user["id"]
    assert "organization_id" not in claims and "permissions" not in claims
    grant = await active_grant(idp.app[SERVICES], claims["grant_id"])
    assert (grant.workspace_id, grant.user_id, grant.client_id, grant.connection_ids) == (workspace_id, idp.user["id"], client["client_id"], (chosen,))


async def test_introspection_tells_the_audience_of_an_agents_token(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.operator_client("third_party", scope="openid mcp offline_access")
    tokens = await agent_tokens(idp, client)
    response = await idp.http.post("/api/v1/oidc/introspect", data={"token": tokens["access_token"], **client})
    body = await response.json()
    assert body["active"] is True and body["aud"] == resource_of(idp)


async def test_the_token_is_for_the_mcp_server_even_when_the_exchange_leaves_resource_out(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    answer, verifier = await agent_code(idp, client)
    response = await idp.token(client, grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier)
    assert response.status == 200
    assert (await claims_of(idp, (await response.json())["access_token"]))["aud"] == resource_of(idp)


# -- resource indicators -----------------------------------------------------------------------------


@pytest.mark.parametrize("resource", ["https://evil.example/mcp", "http://127.0.0.1:8080/mcp/", "http://127.0.0.1:8080/"])
async def test_an_unknown_resource_is_invalid_target_sent_back_with_iss(idp, resource):
    client = await idp.register(**AGENT)
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(client, resource=resource, scope=AGENT_SCOPE, code_challenge=challenge, code_challenge_method="S256")
    assert response.status == 302
    answer = idp.query_of(response.headers["Location"])
    assert answer["error"] == "invalid_target" and answer["iss"] == issuer_of(idp) and answer["state"] == "st4te"


async def test_the_token_endpoint_refuses_another_resource_than_the_authorized_one(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    answer, verifier = await agent_code(idp, client)
    response = await idp.token(
        client, grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier, resource="https://evil.example/mcp"
    )
    assert response.status == 400 and (await response.json())["error"] == "invalid_target"
    # a code of the IdP's own (no resource) cannot be turned into a token for /mcp
    plain = await idp.register(client_name="Plain", token_endpoint_auth_method="none")
    code, verifier = await idp.code_for(plain)
    response = await idp.token(plain, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier, resource=resource_of(idp))
    assert response.status == 400 and (await response.json())["error"] == "invalid_target"


async def test_pkce_is_required_for_an_agent_even_of_a_client_that_does_not_require_it(idp):
    metadata = validate_metadata(
        {"client_name": "Old app", "redirect_uris": [idp.redirect], "scope": "openid mcp", "require_pkce": False, "grant_types": ["authorization_code"]}
    )
    async with idp.app[SERVICES].db.transaction() as session:
        issued = await create_client(session, idp.app[SERVICES].secrets, metadata)
    client = {"client_id": issued.row.client_id, "client_secret": issued.client_secret}
    response = await idp.authorize(client, resource=resource_of(idp), scope="mcp")
    answer = idp.query_of(response.headers["Location"])
    assert answer["error"] == "invalid_request" and "code_challenge" in answer["error_description"]
    assert answer["iss"] == issuer_of(idp)


# -- refresh ---------------------------------------------------------------------------------------


async def test_an_agents_refresh_token_rotates_and_the_old_one_then_fails(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT, grant_types=["authorization_code", "refresh_token"])
    first = await agent_tokens(idp, client)
    grant_id = (await claims_of(idp, first["access_token"]))["grant_id"]
    response = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], resource=resource_of(idp))
    assert response.status == 200, await response.text()
    second = await response.json()
    assert second["refresh_token"] != first["refresh_token"]
    claims = await claims_of(idp, second["access_token"])
    assert claims["aud"] == resource_of(idp) and claims["grant_id"] == grant_id
    again = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], resource=resource_of(idp))
    assert again.status == 400 and (await again.json())["error"] == "invalid_grant"
    # reuse of a rotated token revokes the grant (RFC 9700 2.2.2): the agent's access ends too
    with pytest.raises(Exception, match="revoked"):
        await active_grant(idp.app[SERVICES], grant_id)


async def test_a_refresh_asking_for_another_resource_is_invalid_target(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT, grant_types=["authorization_code", "refresh_token"])
    first = await agent_tokens(idp, client)
    response = await idp.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], resource="https://evil.example/")
    assert response.status == 400 and (await response.json())["error"] == "invalid_target"


# -- the consent page -------------------------------------------------------------------------------


async def agent_consent_location(idp, client) -> str:
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(client, resource=resource_of(idp), scope=AGENT_SCOPE, code_challenge=challenge, code_challenge_method="S256")
    location = response.headers["Location"]
    if "/login" in location:
        location = (await idp.login(location)).headers["Location"]
    assert "/api/v1/oidc/consent" in location, location
    return location


async def test_the_consent_page_shows_the_agent_its_origin_and_that_it_is_unverified(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"], "acme", name="Ada's Acme")
    client = await idp.register(
        client_name="Some <b>agent</b>", token_endpoint_auth_method="none", scope=AGENT_SCOPE, redirect_uris=["https://agent.example/cb"]
    )
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(
        client, redirect_uri="https://agent.example/cb", resource=resource_of(idp), scope=AGENT_SCOPE, code_challenge=challenge, code_challenge_method="S256"
    )
    location = (await idp.login(response.headers["Location"])).headers["Location"]
    page = await (await idp.http.get(location)).text()
    assert "Some &lt;b&gt;agent&lt;/b&gt;" in page
    assert "agent.example" in page and 'id="unverified-agent"' in page
    assert "acme (Ada&#39;s Acme)" in page
    assert 'id="workspace-name"' in page  # one workspace: named, nothing to pick


async def test_an_agent_the_operator_vouched_for_is_not_marked_unverified(make_idp):
    from patchbay.core.settings import IdentitySettings

    idp = await make_idp(identity=IdentitySettings(trusted_agents=["localhost"]))
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    page = await (await idp.http.get(await agent_consent_location(idp, client))).text()
    assert 'id="unverified-agent"' not in page and 'id="agent-verified"' in page


async def test_an_agent_is_asked_for_every_time_and_never_silently(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    await agent_tokens(idp, client)
    await agent_consent_location(idp, client)  # a second authorization shows the page again
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(client, resource=resource_of(idp), scope=AGENT_SCOPE, code_challenge=challenge, code_challenge_method="S256", prompt="none")
    answer = idp.query_of(response.headers["Location"])
    assert answer["error"] == "consent_required" and answer["iss"] == issuer_of(idp)


async def test_denying_an_agent_answers_access_denied_with_iss(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    response = await consent(idp, await agent_consent_location(idp, client), decision="deny")
    answer = idp.query_of(response.headers["Location"])
    assert answer["error"] == "access_denied" and answer["iss"] == issuer_of(idp) and answer["state"] == "st4te"


async def test_a_user_of_several_workspaces_picks_the_one_the_agent_gets(idp):
    services = idp.app[SERVICES]
    async with services.db.transaction() as session:
        second, _ = await create_workspace(session, name="Second place")
        await add_member(session, workspace_id=second.id, user_id=idp.user["id"], role="admin")
    mine = await add_connection(idp.app, second.id, "acme")
    client = await idp.register(**AGENT)
    location = await agent_consent_location(idp, client)
    page = await (await idp.http.get(location)).text()
    assert 'id="pick-workspace"' in page and "Second place" in page
    picked = await (await idp.http.get(location + "&workspace=" + second.id)).text()
    assert checkboxes(picked) == [mine]


async def test_the_chosen_workspace_is_the_grants(idp):
    services = idp.app[SERVICES]
    async with services.db.transaction() as session:
        second, _ = await create_workspace(session, name="Second place")
        await add_member(session, workspace_id=second.id, user_id=idp.user["id"], role="admin")
    mine = await add_connection(idp.app, second.id, "acme")
    client = await idp.register(**AGENT)
    tokens = await agent_tokens(idp, client, workspace=second.id)
    grant = await active_grant(services, (await claims_of(idp, tokens["access_token"]))["grant_id"])
    assert (grant.workspace_id, grant.connection_ids) == (second.id, (mine,))


async def test_a_connection_of_another_workspace_cannot_be_granted(idp):
    services = idp.app[SERVICES]
    await add_connection(idp.app, idp.workspace["workspace_id"])
    async with services.db.transaction() as session:
        other, _ = await create_workspace(session, name="Not yours")
    theirs = await add_connection(idp.app, other.id, "acme")
    client = await idp.register(**AGENT)
    response = await consent(idp, await agent_consent_location(idp, client), connections=[theirs])
    assert response.status == 400
    assert "Location" not in response.headers and theirs in await response.text()


async def test_a_workspace_the_user_only_views_cannot_be_granted(idp):
    services = idp.app[SERVICES]
    async with services.db.transaction() as session:
        viewed, _ = await create_workspace(session, name="Only viewing")
        await add_member(session, workspace_id=viewed.id, user_id=idp.user["id"], role="viewer")
    theirs = await add_connection(idp.app, viewed.id, "acme")
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    location = await agent_consent_location(idp, client)
    assert "Only viewing" not in await (await idp.http.get(location)).text()
    page = await idp.http.get(location)
    fields = {**idp.form_fields(await page.text()), "workspace": viewed.id}
    response = await idp.http.post("/api/v1/oidc/consent", data=[*fields.items(), ("decision", "allow"), ("connection", theirs)], allow_redirects=False)
    assert response.status == 400 and "Location" not in response.headers


async def test_choosing_no_connection_is_asked_again(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    response = await consent(idp, await agent_consent_location(idp, client), connections=[])
    assert response.status == 400 and 'id="consent-error"' in await response.text()
