"""The identity-provider driver of tests/identity (login and consent walked with the test client),
for the session attack tests; loaded from that folder's conftest so that both stay one driver."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("identity_driver", Path(__file__).parents[1] / "identity" / "conftest.py")
identity_driver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(identity_driver)


@pytest.fixture
def make_idp(aiohttp_client, make_app):
    return identity_driver.make_idp.__wrapped__(aiohttp_client, make_app)


@pytest.fixture
async def idp(make_idp):
    return await make_idp()


async def signed_in(idp, client) -> tuple[str, dict]:
    """Sign the test browser in through ``client``: the session cookie's value and the tokens."""
    tokens = await idp.tokens(client, scope="openid offline_access")
    return idp.http.session.cookie_jar.filter_cookies(idp.http.make_url("/"))["pb_idp_session"].value, tokens


async def prompt_none(idp, client) -> dict[str, str]:
    """What a silent authorization answers with the browser's current cookies."""
    _, challenge = idp.pkce_pair()
    response = await idp.authorize(client, code_challenge=challenge, code_challenge_method="S256", prompt="none")
    return idp.query_of(response.headers["Location"])
