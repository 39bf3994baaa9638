"""Providers whose HTTP Basic pair is not ``key:secret`` (``basic_pair``) ask what the provider's
docs ask, in its words, and a proxied call carries the pair the docs describe: lemlist takes the
API key as the password with an empty user (``:key``), Mailgun the key as the password of the user
``api`` (with a US or EU base URL), Zendesk an API token as the password of ``{email}/token``."""

from __future__ import annotations

import base64

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.fields import form_fields
from patchbay.core.connections.facts import connect_facts
from patchbay.core.plugins.provider import DefinitionError, Provider
from patchbay.testing import add_connection
from tests.catalog.test_catalog_connect_fields import _connection_id, _page, _session, _submit, faked_provider  # noqa: F401 (a fixture)


def _basic(pair: str) -> str:
    return "Basic " + base64.b64encode(pair.encode()).decode()


CASES = {
    # provider: (asked fields with their labels, words of the help, docs link, form, proxied path, pair sent)
    "lemlist": (
        {"apiKey": "API key"},
        ("Settings → Integrations",),
        "https://developer.lemlist.com/api-reference/getting-started/authentication",
        {"apiKey": "lem_4f2a"},
        "/api/team",
        ":lem_4f2a",
    ),
    "mailgun": (
        {"apiKey": "API key"},  # the region has a default: the customer sets it in the session's metadata
        ("API Security",),
        "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/",
        {"apiKey": "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"},
        "/v4/domains",
        "api:key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
    ),
    "zendesk-api-key": (
        {"apiKey": "Email address", "apiSecret": "API token", "param:subdomain": "Zendesk subdomain"},
        ("agent", "Admin Center → Apps and integrations → APIs → Zendesk API"),
        "https://support.zendesk.com/hc/en-us/articles/4408831452954-Authentication-for-API-requests",
        {"apiKey": "jdoe@example.com", "apiSecret": "6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv"},
        "/api/v2/users.json",
        "jdoe@example.com/token:6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv",
    ),
}


def test_the_form_asks_exactly_the_providers_fields_in_its_words(make_app):
    providers = make_app()[SERVICES].registry.providers
    for name, (labels, help_words, docs, *_rest) in CASES.items():
        fields = form_fields(providers[name])
        assert {field.name: field.label for field in fields} == labels, name
        assert all(field.required for field in fields if not field.name.startswith("param:")), name
        assert all(field.help for field in fields), f"{name}: every field says where to find it"
        assert all(any(word in (field.help or "") for field in fields) for word in help_words), name
        assert providers[name].docs_url == docs
    key = {field.name: field for field in form_fields(providers["lemlist"])}["apiKey"]
    assert key.kind == "password", "lemlist's key is its password: typed as a secret"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_connection_made_in_the_connect_ui_sends_the_documented_pair(name, faked_provider):
    _labels, _help, docs, form, path, pair = CASES[name]
    faked = await faked_provider(name)
    upstream, api, ws = faked.upstream, faked.api, faked.ws

    page = await _page(api, await _session(api, ws, name), name)
    asked = {field for field in ("apiKey", "apiSecret") if f'name="{field}"' in page}
    assert asked == set(form), f"{name} asks {sorted(asked)}"  # (the fake upstream's URL has no subdomain to ask)
    assert f'href="{docs}"' in page
    done = await _submit(api, page, name, form)
    assert done.status == 303, await done.text()

    proxied = await api.get(f"/connect/v1/proxy/{name}{path}", headers={**ws["headers"], "x-connection-id": await _connection_id(api, ws)})
    assert proxied.status == 200, await proxied.text()
    assert upstream.calls[-1][0] == path
    assert upstream.calls[-1][1]["authorization"] == _basic(pair)


def test_mailguns_region_picks_the_documented_base_url(make_app):
    mailgun = make_app()[SERVICES].registry.providers["mailgun"]
    region = connect_facts(mailgun)["connectionParams"]
    assert [(p["name"], p["label"], p["default"]) for p in region] == [("region", "Region", "api")]
    assert "api.eu.mailgun.net" in region[0]["help"]
    assert mailgun.api_base_url.format(region="api") == "https://api.mailgun.net"
    assert mailgun.api_base_url.format(region="api.eu") == "https://api.eu.mailgun.net"
    assert mailgun.connection_param_defaults["region"] == "api"


@pytest.mark.parametrize(
    "fields",
    [
        {"auth_mode": "api_key", "basic_pair": ":{username}"},
        {"auth_mode": "basic", "basic_pair": "{password}:"},
        {"auth_mode": "basic", "basic_pair": "{username}:{api_key}"},
        {"auth_mode": "basic", "basic_pair": ":{username}", "basic_password": ""},
    ],
)
def test_a_basic_pair_the_credential_cannot_fill_is_refused(fields):
    with pytest.raises(DefinitionError, match="basic_pair"):
        Provider(name="acme", display_name="Acme", category="other", api_base_url="https://api.acme.test", **fields).validate()


@pytest.mark.parametrize(
    ("name", "stored", "pair"),
    [
        # stored before basic_pair: Mailgun's user "api" and the key as the secret; Zendesk's user name whole
        ("mailgun", {"username": "api", "password": "key-3ax6"}, "api:key-3ax6"),
        ("zendesk-api-key", {"username": "jdoe@example.com/token", "password": "6wiIBW"}, "jdoe@example.com/token:6wiIBW"),
    ],
)
async def test_a_connection_stored_before_the_pair_was_declared_still_sends_the_documented_pair(name, stored, pair, faked_provider):
    faked = await faked_provider(name)
    upstream, app, api, ws = faked.upstream, faked.app, faked.api, faked.ws
    connection_id = await add_connection(app, ws["workspace_id"], name, credentials=stored)
    proxied = await api.get(f"/connect/v1/proxy/{name}/ping", headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 200, await proxied.text()
    assert upstream.calls[-1][1]["authorization"] == _basic(pair)
