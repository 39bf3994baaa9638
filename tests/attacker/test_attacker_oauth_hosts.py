"""Attacks on the deployment's OAuth apps (``[providers.<name>] client_id/client_secret``): a
connection parameter that fills the host of a provider's OAuth URLs must not carry the operator's
client id or secret to a host the caller chose, on any path (login redirect, callback, refresh,
revocation, token import, the hosted connect page). The attacker host is a real TLS server on
127.0.0.2 (a certificate of a test CA the deployment's outbound client trusts) that records all it
receives and plays along as an OAuth server would.

Also: a host the operator vouched for (the catalog's ``*.my.salesforce.com``, or
``[providers.<name>] oauth_hosts``) still works, a workspace's own OAuth app (BYOA) may go to any
host, and a parameter the operator set is the operator's only."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import socket
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.auth import UnvouchedHost, check_oauth_hosts
from patchbay.core.connections.models import Connection, OAuthState
from patchbay.core.connections.oauth import COOKIE_PREFIX, binding_value, callback_url, state_mac
from patchbay.core.connections.store import save_connection
from patchbay.core.outbound import Outbound
from patchbay.core.plugins.provider import host_matches
from patchbay.core.plugins.registry import PluginSettingsError
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

HOST = "127.0.0.2"
#: a Salesforce My Domain name; the test resolves it to HOST
MY_DOMAIN = "acme.my.salesforce.com"
CLIENT_ID = "operator-client-id-7731"
CLIENT_SECRET = "operator-client-secret-5519"
OPERATOR_APPS = {name: {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET} for name in ("salesforce", "clio")}


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context): a test CA and its certificate for HOST and MY_DOMAIN."""
    now = datetime.datetime.now(datetime.UTC)
    valid = {"not_valid_before": now - datetime.timedelta(minutes=5), "not_valid_after": now + datetime.timedelta(hours=1)}
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder(
            subject_name=_name("oauth test ca"),
            issuer_name=_name("oauth test ca"),
            public_key=ca_key.public_key(),
            serial_number=x509.random_serial_number(),
            **valid,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    sans = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName(MY_DOMAIN)])
    cert = (
        x509.CertificateBuilder(
            subject_name=_name(HOST), issuer_name=ca.subject, public_key=key.public_key(), serial_number=x509.random_serial_number(), **valid
        )
        .add_extension(sans, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "oauth-host.pem", directory / "oauth-host.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    return server, ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())


class OAuthHost:
    """A TLS OAuth server that records every request (query, form, decoded Basic credentials) and
    answers like a provider: its authorization page sends the browser back with a code, its token
    endpoint issues tokens, its revocation endpoint accepts."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.text()
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("Basic "):
            authorization = base64.b64decode(authorization[6:]).decode("utf-8", "replace")
        self.received.append(f"{request.method} {request.path_qs} {body} {authorization}")
        if request.path.endswith("/authorize"):
            raise web.HTTPFound(request.query["redirect_uri"] + "?" + urlencode({"code": "code-1", "state": request.query["state"]}))
        if request.path.endswith("/token"):
            return web.json_response({"access_token": "at-new", "refresh_token": "rt-new", "expires_in": 3600, "instance_url": f"https://{MY_DOMAIN}"})
        return web.Response(status=200)

    async def start(self, tls: ssl.SSLContext) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.server = TestServer(app, host=HOST, scheme="https")
        await self.server.start_server(ssl=tls)

    @property
    def netloc(self) -> str:
        return f"{HOST}:{self.server.port}"

    def saw(self, value: str) -> bool:
        return any(value in entry for entry in self.received)


@pytest.fixture
def tls(tmp_path):
    return make_tls(tmp_path)


@pytest.fixture
async def attacker(tls):
    host = OAuthHost()
    await host.start(tls[0])
    yield host
    await host.server.close()


@pytest.fixture
def resolve_my_domain(monkeypatch):
    """MY_DOMAIN resolves to HOST (an /etc/hosts line for this test); other names as usual."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        return real(HOST if host == MY_DOMAIN else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def serve(aiohttp_client, make_app, tls, database_url):
    """``await serve(**provider_tables)``: a client of an app with the operator's OAuth apps of
    salesforce and clio (more ``[providers.<name>]`` keys merged in), whose outbound client trusts
    the test CA, and an enterprise workspace as ``client.ws``."""

    async def start(**tables: dict[str, Any]):
        providers = {name: {**OPERATOR_APPS.get(name, {}), **tables.get(name, {})} for name in {*OPERATOR_APPS, *tables}}
        app = make_app(providers=providers, database_url=database_url)
        app[SERVICES].outbound = app[SERVICES].outbound = Outbound(allow_insecure=True, ssl_context=tls[1])  # as the test settings: loopback targets allowed
        client = await aiohttp_client(app)
        client.ws = await create_workspace_with_key(app, plan="enterprise")
        return client

    return start


async def follow_provider(client, authorization_url: str, tls) -> aiohttp.ClientResponse:
    """The browser at the provider's authorization page, then back at our callback."""
    async with aiohttp.ClientSession() as browser, browser.get(authorization_url, ssl=tls[1], allow_redirects=False) as consent:
        back = urlsplit(consent.headers["Location"])
    return await client.get(back.path + "?" + back.query, allow_redirects=False)


async def plant_connection(client, *, hostname: str) -> str:
    """A salesforce connection made with the deployment's app before the rule (or before the
    operator stopped vouching for its host), with a refresh token."""
    async with client.server.app[SERVICES].db.transaction(tenant=client.ws["workspace_id"]) as session:
        row = await save_connection(
            client.server.app[SERVICES],
            session,
            workspace_id=client.ws["workspace_id"],
            provider="salesforce",
            credentials={"access_token": "at-old", "refresh_token": "rt-old"},
            params={"hostname": hostname, "instance_url": f"https://{MY_DOMAIN}"},
            expires_at=utcnow(),
            oauth_app="deployment",
        )
        return row.id


async def connections(client) -> int:
    async with client.server.app[SERVICES].db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(Connection)))


# -- the attacks -----------------------------------------------------------------------------------


async def test_login_does_not_send_the_browser_and_the_operators_app_to_a_host_the_caller_chose(serve, attacker, tls):
    client = await serve()
    login = await client.get("/auth/salesforce/login", params={"hostname": attacker.netloc}, headers=client.ws["headers"], allow_redirects=False)
    if login.status == 302:  # the attack worked this far: play it to the end
        assert urlsplit(login.headers["Location"]).netloc != attacker.netloc, "the operator's client id went to the attacker's authorization page"
    assert login.status == 400, await login.text()
    body = await login.json()
    assert body["statusCode"] == 400 and "/byoa/salesforce/credentials" in body["message"] and "oauth_hosts" in body["message"]
    assert attacker.received == []


async def test_callback_does_not_exchange_a_code_at_a_host_the_caller_chose(serve, attacker, tls):
    """A login begun before the rule (or before the operator dropped the host) is completed
    without sending the operator's secret to its host."""
    client = await serve()
    app = client.server.app
    row = OAuthState(
        workspace_id=client.ws["workspace_id"],
        provider="salesforce",
        callback_uri=callback_url(app[SERVICES], "salesforce"),
        params={"hostname": attacker.netloc},
        oauth_app="deployment",
        expires_at=utcnow() + datetime.timedelta(minutes=5),
        meta={},
    )
    async with app[SERVICES].db.transaction(tenant=client.ws["workspace_id"]) as session:
        session.add(row)
        await session.flush()
        state = f"{row.id}.{state_mac(app[SERVICES], row)}"
    client.session.cookie_jar.update_cookies({COOKIE_PREFIX + row.id: binding_value(app[SERVICES], row.id)}, client.make_url("/auth/"))
    done = await client.get("/auth/salesforce/callback", params={"state": state, "code": "code-1"}, allow_redirects=False)
    assert not attacker.saw(CLIENT_SECRET) and not attacker.saw(CLIENT_ID), attacker.received
    assert done.status == 400 and "oauth_hosts" in await done.text()
    assert await connections(client) == 0


async def test_refresh_does_not_send_the_operators_secret_to_a_stored_host(serve, attacker):
    client = await serve()
    await plant_connection(client, hostname=attacker.netloc)
    refreshed = await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert not attacker.saw(CLIENT_SECRET), attacker.received
    assert refreshed.status == 201
    (result,) = (await refreshed.json())["connections"]
    assert result["refreshed"] is False and "oauth_hosts" in result["reason"]


async def test_revocation_does_not_send_the_operators_secret_to_a_stored_host(serve, attacker):
    client = await serve()
    connection_id = await plant_connection(client, hostname=attacker.netloc)
    deleted = await client.delete(f"/connect/v1/connections/{connection_id}", headers=client.ws["headers"])
    assert not attacker.saw(CLIENT_SECRET), attacker.received
    assert deleted.status == 200 and not (await deleted.json())["revoked"]  # the connection is still deleted
    assert await connections(client) == 0


async def test_imported_tokens_with_a_host_the_caller_chose_are_refused(serve, attacker):
    client = await serve()
    body = {
        "providerType": "salesforce",
        "credentials": {"accessToken": "at-stolen", "refreshToken": "rt-stolen"},
        "params": {"hostname": attacker.netloc, "instance_url": f"https://{MY_DOMAIN}"},
    }
    imported = await client.post("/api/connections/import", json=body, headers=client.ws["headers"])
    await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert not attacker.saw(CLIENT_SECRET), attacker.received
    assert imported.status == 400 and "/byoa/salesforce/credentials" in (await imported.json())["message"]
    assert await connections(client) == 0


async def test_an_end_user_typing_a_host_on_the_connect_page_gets_no_operator_secret(serve, attacker, tls):
    client = await serve()
    created = await client.post("/connect/v1/connect-sessions", json={"endUser": {"id": "eve"}, "allowedProviders": ["clio"]}, headers=client.ws["headers"])
    token = (await created.json())["token"]
    await client.get(f"/connect/ui?session={token}")
    page = await (await client.get("/connect/ui/providers/clio")).text()
    assert 'name="param:hostname"' in page  # the page asks the end user for the host
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    started = await client.post("/connect/ui/providers/clio/oauth", data={"csrf": csrf, "param:hostname": attacker.netloc}, allow_redirects=False)
    if started.status == 302:  # the attack worked this far: play it to the end
        await follow_provider(client, started.headers["Location"], tls)
    assert not attacker.saw(CLIENT_SECRET) and not attacker.saw(CLIENT_ID), attacker.received
    assert started.status == 400 and "oauth_hosts" in await started.text()
    assert await connections(client) == 0


async def test_a_parameter_the_operator_set_is_the_operators_only(serve, attacker):
    client = await serve(salesforce={"connection_param_defaults": {"hostname": MY_DOMAIN}})
    login = await client.get("/auth/salesforce/login", params={"hostname": "login.salesforce.com"}, headers=client.ws["headers"], allow_redirects=False)
    assert login.status == 400 and "hostname" in (await login.json())["message"]
    body = {
        "providerType": "salesforce",
        "credentials": {"accessToken": "at"},
        "params": {"hostname": "test.salesforce.com", "instance_url": f"https://{MY_DOMAIN}"},
    }
    imported = await client.post("/api/connections/import", json=body, headers=client.ws["headers"])
    assert imported.status == 400 and "hostname" in (await imported.json())["message"]
    assert await connections(client) == 0


# -- what still works ------------------------------------------------------------------------------


async def connect_through(client, tls, **params: str) -> dict[str, Any]:
    """An OAuth login of salesforce or clio (``provider=``) with ``params``, walked to the end; the connection."""
    provider = params.pop("provider", "salesforce")
    login = await client.get(f"/auth/{provider}/login", params=params, headers=client.ws["headers"], allow_redirects=False)
    assert login.status == 302, await login.text()
    done = await follow_provider(client, login.headers["Location"], tls)
    assert done.status == 200 and "is connected" in await done.text(), await done.text()
    async with client.server.app[SERVICES].db.session() as session:
        (row,) = list(await session.scalars(select(Connection)))
    return {"id": row.id, "oauth_app": row.oauth_app, "params": row.params}


async def test_a_host_of_the_providers_allow_list_gets_the_operators_app(serve, attacker, tls, resolve_my_domain):
    """The catalog vouches for ``*.my.salesforce.com``: an org's My Domain login uses the
    deployment's app, and its refresh too."""
    client = await serve()
    connection = await connect_through(client, tls, hostname=f"{MY_DOMAIN}:{attacker.server.port}")
    assert connection["oauth_app"] == "deployment" and attacker.saw(CLIENT_SECRET)
    refreshed = await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert (await refreshed.json())["connections"][0]["refreshed"] is True


async def test_a_host_the_operator_named_in_oauth_hosts_gets_the_operators_app(serve, attacker, tls):
    client = await serve(clio={"oauth_hosts": [HOST]})
    connection = await connect_through(client, tls, provider="clio", hostname=attacker.netloc)
    assert connection["oauth_app"] == "deployment" and attacker.saw(CLIENT_SECRET)


async def test_the_workspaces_own_app_may_go_to_any_host(serve, attacker, tls):
    client = await serve()
    saved = await client.post("/byoa/clio/credentials", json={"clientId": "own-id", "clientSecret": "own-secret"}, headers=client.ws["headers"])
    assert saved.status == 201
    connection = await connect_through(client, tls, provider="clio", hostname=attacker.netloc)
    assert connection["oauth_app"] == "byoa" and attacker.saw("own-secret")
    assert not attacker.saw(CLIENT_SECRET) and not attacker.saw(CLIENT_ID)


@pytest.mark.parametrize("pattern", ["*.com", "*", "evil.*.com", "*.Clio.com", "clio.com/"])
def test_an_oauth_hosts_pattern_that_vouches_for_too_much_stops_the_start(make_app, pattern):
    with pytest.raises(PluginSettingsError, match="oauth_hosts entry"):
        make_app(providers={"clio": {"oauth_hosts": [pattern]}})


@pytest.mark.parametrize(
    ("pattern", "host", "vouched"),
    [
        ("*.my.salesforce.com", "acme.my.salesforce.com", True),
        ("*.my.salesforce.com", "acme--dev.sandbox.my.salesforce.com", True),
        ("*.my.salesforce.com", "my.salesforce.com", False),
        ("*.my.salesforce.com", "evilmy.salesforce.com", False),
        ("*.authentication.*.hana.ondemand.com", "acme.authentication.eu10.hana.ondemand.com", True),
        # where SAP customers deploy their own applications: not SAP's token service
        ("*.authentication.*.hana.ondemand.com", "evil.cfapps.eu10.hana.ondemand.com", False),
        ("*.authentication.*.hana.ondemand.com", "acme.authentication.x.eu10.hana.ondemand.com", False),
        ("login.salesforce.com", "login.salesforce.com", True),
        ("login.salesforce.com", "x.login.salesforce.com", False),
    ],
)
def test_an_oauth_hosts_pattern_vouches_only_for_the_labels_it_names(pattern, host, vouched):
    assert host_matches(pattern, host) is vouched


def test_the_catalogs_sap_token_service_pattern_does_not_vouch_for_customers_applications(make_app):
    provider = make_app()[SERVICES].registry.provider("sap-odata-oauth2-cc")
    check_oauth_hosts(provider, "deployment", {"subdomain": "acme", "region": "eu10"})
    with pytest.raises(UnvouchedHost):
        check_oauth_hosts(provider, "deployment", {"subdomain": "evil", "region": "eu10.cfapps"})
