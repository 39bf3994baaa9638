"""The consent page says who is signed in, with a way to switch account (sign out, sign in as
someone else, and come back to the same authorization request), and where the client sends the
user back; the agent consent page too. Over HTTP, as a browser without JavaScript would."""

from __future__ import annotations

import html
import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member
from tests.identity.mcp_flow import AGENT_SCOPE, resource_of

PREFIX = "/api/v1/oidc"


def visible(page: str) -> str:
    body = page.split("<body>", 1)[1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


async def consent_location(idp, client, **params) -> tuple[str, str]:
    """Signed in as Ada, at the consent page of ``client``: (its URL, the PKCE verifier)."""
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(client, scope="openid email", code_challenge=challenge, code_challenge_method="S256", state="keep-me", **params)
    location = response.headers["Location"]
    if "/login" in location:
        location = (await idp.login(location)).headers["Location"]
    assert f"{PREFIX}/consent" in location, location
    return location, verifier


async def second_user(idp) -> str:
    async with idp.app[SERVICES].db.transaction() as session:
        user = await create_user(session, email="grace@example.com", password=idp.password, name="Grace Hopper")
        await add_member(session, workspace_id=idp.workspace["workspace_id"], user_id=user.id, role="manager")
        return user.id


async def test_the_consent_page_shows_who_is_signed_in_and_the_redirect_host(idp):
    client = await idp.operator_client()
    location, _ = await consent_location(idp, client)
    page = await (await idp.http.get(location)).text()
    text = visible(page)
    assert "Signed in as Ada Lovelace (ada@example.com)" in text
    assert "Not you? Sign out and use another account" in text
    assert f'action="{PREFIX}/switch-account"' in page
    assert "When you choose, you go back to localhost:9999." in text


async def test_switching_account_signs_out_and_comes_back_to_the_same_request_as_the_other_account(idp):
    grace_id = await second_user(idp)
    client = await idp.operator_client()
    location, verifier = await consent_location(idp, client, login_hint="ada@example.com")
    fields = idp.form_fields(await (await idp.http.get(location)).text())
    assert set(fields) == {"interaction", "csrf"}
    switched = await idp.http.post(f"{PREFIX}/switch-account", data=fields, allow_redirects=False)
    assert switched.status == 303 and switched.headers["Location"].startswith(f"{PREFIX}/login?interaction=")
    assert "pb_idp_session" in switched.cookies and switched.cookies["pb_idp_session"].value == ""
    # Ada's session is over: her consent page is gone, and the login page no longer offers her address
    assert "Consent link expired" in await (await idp.http.get(location)).text()
    login_page = await (await idp.http.get(switched.headers["Location"])).text()
    assert 'value="ada@example.com"' not in login_page
    to_consent = await idp.login(switched.headers["Location"], email="grace@example.com")
    assert to_consent.status == 303 and f"{PREFIX}/consent" in to_consent.headers["Location"]
    page = await (await idp.http.get(to_consent.headers["Location"])).text()
    assert "Signed in as Grace Hopper (grace@example.com)" in visible(page)
    back = await idp.consent(to_consent.headers["Location"])
    answer = idp.query_of(back.headers["Location"])
    assert back.headers["Location"].startswith(idp.redirect) and answer["state"] == "keep-me"
    tokens = await idp.token(client, grant_type="authorization_code", code=answer["code"], redirect_uri=idp.redirect, code_verifier=verifier)
    assert tokens.status == 200, await tokens.text()
    userinfo = await idp.http.get(f"{PREFIX}/userinfo", headers={"Authorization": f"Bearer {(await tokens.json())['access_token']}"})
    assert (await userinfo.json())["sub"] == grace_id


async def test_switch_account_needs_the_pages_csrf_token(idp):
    client = await idp.operator_client()
    location, _ = await consent_location(idp, client)
    fields = idp.form_fields(await (await idp.http.get(location)).text())
    refused = await idp.http.post(f"{PREFIX}/switch-account", data={**fields, "csrf": "forged"}, allow_redirects=False)
    assert refused.status == 403
    assert "Signed in as Ada Lovelace" in visible(await (await idp.http.get(location)).text())  # still signed in


async def test_the_agent_consent_page_shows_who_is_signed_in_and_the_redirect_host(idp):
    client = await idp.register(client_name="Agent", token_endpoint_auth_method="none", scope=AGENT_SCOPE, redirect_uris=["https://agent.example/cb"])
    verifier, challenge = idp.pkce_pair()
    response = await idp.authorize(
        client, redirect_uri="https://agent.example/cb", resource=resource_of(idp), scope=AGENT_SCOPE, code_challenge=challenge, code_challenge_method="S256"
    )
    location = (await idp.login(response.headers["Location"])).headers["Location"]
    page = await (await idp.http.get(location)).text()
    text = visible(page)
    assert "Signed in as Ada Lovelace (ada@example.com)" in text
    assert "When you choose, you go back to agent.example." in text
    assert f'action="{PREFIX}/switch-account"' in page
