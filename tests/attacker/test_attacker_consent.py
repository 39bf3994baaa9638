"""Attacks on the consent page with a self-registered app (issue 22, point 9): anyone may register an
app (RFC 7591) under any name, so the page must say that such an app is unverified, show the host
the user goes back to, and call out a name borrowed from the operator's apps or the deployment's
own branding. Sent over HTTP as a signed-in user's browser would."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest

from patchbay.core.settings import BrandingSettings

_spec = importlib.util.spec_from_file_location("conftest_sessions", Path(__file__).with_name("conftest_sessions.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)  # tests/ is no package (--import-mode=importlib): load the helper by path
make_idp = helpers.make_idp  # fixture

OPERATOR_APP = "Acme CRM"


@pytest.fixture
async def idp(make_idp, database_url):
    """A deployment branded "Acme Cloud" whose operator made the app "Acme CRM"; its user is signed in."""
    idp = await make_idp(database_url=database_url, branding=BrandingSettings(name="Acme Cloud"))
    operator_app = await idp.operator_client("first_party", client_name=OPERATOR_APP)
    await idp.code_for(operator_app)
    return idp


async def consent_text(idp, client: dict, redirect_uri: str) -> str:
    """The visible text of the consent page the signed-in user gets for ``client``."""
    _, challenge = idp.pkce_pair()
    started = await idp.authorize(client, redirect_uri=redirect_uri, code_challenge=challenge, code_challenge_method="S256")
    assert started.status == 302 and "/api/v1/oidc/consent" in started.headers["Location"], started.headers.get("Location")
    page = await idp.http.get(started.headers["Location"])
    assert page.status == 200
    body = (await page.text()).split("<body>", 1)[1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


async def register(idp, name: str, redirect_uri: str) -> dict:
    response = await idp.http.post("/api/v1/oidc/register", json={"client_name": name, "redirect_uris": [redirect_uri]})
    assert response.status == 201, await response.text()
    return await response.json()


@pytest.mark.parametrize("name", ["acme  crm", "ACMECRM", "Ａｃｍｅ ＣＲＭ", "acme cloud"])
async def test_a_self_registered_app_borrowing_the_operators_name_is_shown_unverified_with_its_host(idp, name):
    evil = await register(idp, name, "https://evil.example/cb")
    text = await consent_text(idp, evil, "https://evil.example/cb")
    assert "Unverified app" in text
    assert "you go back to evil.example" in text
    assert "not an app of Acme Cloud" in text


async def test_a_self_registered_app_with_its_own_name_is_unverified_but_not_called_a_borrower(idp):
    app = await register(idp, "Zed's notes", "https://notes.example:8443/cb")
    text = await consent_text(idp, app, "https://notes.example:8443/cb")
    assert "Unverified app" in text and "you go back to notes.example:8443" in text
    assert "not an app of Acme Cloud" not in text


async def test_a_host_of_look_alike_letters_is_shown_in_its_ascii_form(idp):
    lookalike = "https://\u0430cme.example/cb"  # a Cyrillic "а"
    text = await consent_text(idp, await register(idp, "Helper", lookalike), lookalike)
    assert f"you go back to {'аcme.example'.encode('idna').decode()}." in text


async def test_the_operators_own_app_is_not_marked(idp):
    third_party_by_operator = await idp.operator_client("third_party", client_name="Acme Reports", redirect_uris=["https://reports.example/cb"])
    text = await consent_text(idp, third_party_by_operator, "https://reports.example/cb")
    assert "Unverified" not in text and "Acme Reports wants to access your account" in text
