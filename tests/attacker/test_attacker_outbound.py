"""Attacks on the outbound policy (issue 12): a tenant-controlled target reaching private
addresses (literal forms, redirects, connection parameters), oversized and decompression-bomb
bodies, and long streams. 127.0.0.2 plays a public host, 127.0.0.1 the private side."""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import ssl
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from patchbay import hookimpl
from patchbay.core.alerts.service import AlertContext
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.client import open_client
from patchbay.core.errors import UpstreamFailed
from patchbay.core.outbound import GuardedConnector, Outbound, ResponseTooLarge, UnsafeTarget, is_public_address
from patchbay.core.plugins.provider import Provider
from patchbay.core.settings import OutboundSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.plugins.alert_channels import DeliveryFailed, WebhookChannel

PUBLIC = "127.0.0.2"
PRIVATE = "127.0.0.1"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context): a CA and a server certificate for 127.0.0.1 and 127.0.0.2."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("test ca"))
        .issuer_name(_name("test ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.IPAddress(ipaddress.ip_address(PUBLIC)), x509.IPAddress(ipaddress.ip_address(PRIVATE))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("test server"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return server, client


def public_is(address: str):
    """An address rule under which only ``address`` counts as public."""
    return lambda candidate: candidate == address


def strict_outbound(client_tls: ssl.SSLContext, **limits) -> Outbound:
    """A strict :class:`Outbound` (https, public addresses only) where only 127.0.0.2 is public."""
    return Outbound(allow_insecure=False, limits=OutboundSettings(**limits), address_allowed=public_is(PUBLIC), ssl_context=client_tls)


@pytest.fixture
def tls(tmp_path):
    return make_tls(tmp_path)


@pytest.fixture
async def secret_server():
    """A private service on 127.0.0.1 that records every request it gets."""
    hits: list[str] = []

    async def secret(request):
        hits.append(request.path)
        return web.json_response({"secret": "metadata-credentials"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", secret)
    server = TestServer(app, host=PRIVATE)
    await server.start_server()
    yield server, hits
    await server.close()


async def _public_server(tls, routes) -> TestServer:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_route("*", path, handler)
    server = TestServer(app, host=PUBLIC, scheme="https")
    await server.start_server(ssl=tls[0])
    return server


@pytest.mark.parametrize("form", ["127.0.0.1", "[::ffff:127.0.0.1]", "127.1", "2130706433", "0x7f.1", "0.0.0.0"])
async def test_a_literal_private_address_is_refused_at_connect_time(secret_server, form):
    """The resolver-only guard never saw literal IPs: a caller that skipped ``check`` reached them."""
    server, hits = secret_server
    connector = GuardedConnector(address_allowed=is_public_address)
    async with aiohttp.ClientSession(connector=connector) as session:
        with pytest.raises((aiohttp.ClientError, ValueError)):
            async with session.get(f"http://{form}:{server.port}/latest/meta-data"):
                pass
    assert hits == []


@pytest.mark.parametrize("location", [f"http://{PRIVATE}:{{port}}/latest/meta-data", f"https://{PRIVATE}:{{port}}/x", "http://[::1]:{port}/x"])
async def test_a_redirect_from_a_public_host_to_a_private_one_is_refused_on_every_hop(tls, secret_server, location):
    server, hits = secret_server

    async def bounce(request):
        raise web.HTTPFound(location.format(port=server.port))

    public = await _public_server(tls, {"/go": bounce})
    outbound = strict_outbound(tls[1])
    await outbound.start()
    try:
        with pytest.raises(UnsafeTarget):
            async with outbound.session.get(f"https://{PUBLIC}:{public.port}/go", **outbound.follow()):
                pass
    finally:
        await outbound.close()
        await public.close()
    assert hits == []


async def test_a_flow_http_step_does_not_follow_a_redirect_into_the_private_network(aiohttp_client, make_app, tls, secret_server):
    """The reported attack, end to end: the step's output must not carry the private body."""
    server, hits = secret_server

    async def bounce(request):
        raise web.HTTPFound(f"https://{PRIVATE}:{server.port}/latest/meta-data/iam")

    async def fine(request):
        return web.json_response({"ok": True})

    public = await _public_server(tls, {"/go": bounce, "/fine": fine})
    app = make_app(allow_insecure_targets=False)
    app[SERVICES].outbound = app[SERVICES].outbound = strict_outbound(tls[1])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    try:
        outcomes = {}
        for path in ("/fine", "/go"):
            steps = [{"id": "get", "type": "http", "url": f"https://{PUBLIC}:{public.port}{path}"}]
            created = await client.post("/connect/v1/flows", json={"name": path, "steps": steps}, headers=ws["headers"])
            assert created.status == 201, await created.text()
            run = await client.post(f"/connect/v1/flows/{(await created.json())['id']}/test", json={}, headers=ws["headers"])
            assert run.status == 201, await run.text()
            outcomes[path] = await run.json()
    finally:
        await public.close()
    assert outcomes["/fine"]["status"] == "completed"  # the public host itself is reachable
    assert outcomes["/go"]["status"] == "failed" and "private" in outcomes["/go"]["error"]
    assert "metadata-credentials" not in str(outcomes["/go"]) and hits == []


async def test_an_oversized_body_is_cut_at_the_cap(tls):
    async def huge(request):
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(64):
            await response.write(b"x" * 65536)
        return response

    public = await _public_server(tls, {"/huge": huge})
    outbound = strict_outbound(tls[1], max_response_bytes=1024 * 1024)
    await outbound.start()
    try:
        async with outbound.session.get(f"https://{PUBLIC}:{public.port}/huge") as response:
            with pytest.raises(ResponseTooLarge):
                await outbound.read_body(response)
    finally:
        await outbound.close()
        await public.close()


async def test_a_gzip_bomb_is_not_inflated_whole(tls):
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)  # ~64 KiB on the wire

    async def serve_bomb(request):
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    public = await _public_server(tls, {"/bomb": serve_bomb})
    outbound = strict_outbound(tls[1], max_decompressed_bytes=1024 * 1024)
    await outbound.start()
    try:
        async with outbound.session.get(f"https://{PUBLIC}:{public.port}/bomb") as response:
            with pytest.raises(ResponseTooLarge, match="inflates"):
                await outbound.read_body(response)
    finally:
        await outbound.close()
        await public.close()


class TenantHostPack:
    """A provider whose API host is a tenant's connection parameter (like Salesforce's instance URL)."""

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="tenanthost",
                display_name="Tenant Host",
                category="other",
                auth_mode="none",
                api_base_url="{instance_url}/api",
                connection_params=("instance_url",),
            )
        ]


async def _strict_app(aiohttp_client, make_app, tls):
    app = make_app(allow_insecure_targets=False, plugins=[TenantHostPack()])
    app[SERVICES].outbound = app[SERVICES].outbound = strict_outbound(tls[1])
    client = await aiohttp_client(app)
    return client, await create_workspace_with_key(app)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost.", "0x7f.1", "2130706433"])
async def test_a_connection_parameter_cannot_point_the_provider_at_a_private_address(aiohttp_client, make_app, tls, secret_server, host):
    server, hits = secret_server
    client, ws = await _strict_app(aiohttp_client, make_app, tls)
    connect = await client.post(
        "/connect/v1/providers/tenanthost/connect", json={"params": {"instance_url": f"https://{host}:{server.port}"}}, headers=ws["headers"]
    )
    assert connect.status < 500, await connect.text()
    if connect.status == 201:
        connection_id = (await connect.json())["connectionId"]
        call = await client.post(
            "/connect/v1/proxy/tenanthost", json={"method": "GET", "path": "/latest"}, headers={**ws["headers"], "x-connection-id": connection_id}
        )
        assert 400 <= call.status < 500, await call.text()
        assert "metadata-credentials" not in await call.text()
    assert hits == []


async def test_a_gzip_bomb_from_a_tenant_host_is_not_inflated_by_the_connection_client(aiohttp_client, make_app, tls):
    """CRM destinations, actions and record sources read providers through the connection client."""
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)

    async def serve_bomb(request):
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    public = await _public_server(tls, {"/api/bomb": serve_bomb})
    client, ws = await _strict_app(aiohttp_client, make_app, tls)
    client.server.app[SERVICES].outbound.limits.max_decompressed_bytes = 1024 * 1024
    try:
        connect = await client.post(
            "/connect/v1/providers/tenanthost/connect", json={"params": {"instance_url": f"https://{PUBLIC}:{public.port}"}}, headers=ws["headers"]
        )
        assert connect.status == 201, await connect.text()
        provider_client = await open_client(client.server.app[SERVICES], workspace_id=ws["workspace_id"], connection_id=(await connect.json())["connectionId"])
        with pytest.raises(UpstreamFailed) as refused:  # answered 502
            await provider_client.get("/bomb")
        assert "too large" in refused.value.message
    finally:
        await public.close()


async def test_an_alert_webhook_does_not_follow_a_redirect_into_the_private_network(tls, secret_server):
    server, hits = secret_server

    async def bounce(request):
        raise web.HTTPFound(f"https://{PRIVATE}:{server.port}/latest/meta-data")

    public = await _public_server(tls, {"/hook": bounce})
    outbound = strict_outbound(tls[1])
    await outbound.start()
    channel = WebhookChannel()
    try:
        with pytest.raises(DeliveryFailed, match="302"):
            await channel.send(
                {"event": "flow.failed", "flowId": "f1"}, f"https://{PUBLIC}:{public.port}/hook", AlertContext(outbound.session, None, outbound.check)
            )
    finally:
        await outbound.close()
        await public.close()
    assert hits == []


class TenantTokenPack:
    """A client-credentials provider whose token URL is filled from a tenant's parameter."""

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="tenantcc",
                display_name="Tenant CC",
                category="other",
                auth_mode="oauth2_cc",
                token_url="{instance_url}/token",
                api_base_url="{instance_url}/api",
                connection_params=("instance_url",),
            )
        ]


async def test_a_huge_token_response_from_a_tenant_host_is_not_read_whole(aiohttp_client, make_app, tls):
    async def huge_token(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"access_token": "' + b"a" * (4 * 1024 * 1024) + b'"}')
        return response

    public = await _public_server(tls, {"/token": huge_token})
    app = make_app(allow_insecure_targets=False, plugins=[TenantTokenPack()])
    app[SERVICES].outbound = app[SERVICES].outbound = strict_outbound(tls[1], max_response_bytes=1024 * 1024)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    try:
        connect = await client.post(
            "/connect/v1/providers/tenantcc/connect",
            headers=ws["headers"],
            json={"credentials": {"apiKey": "id", "apiSecret": "secret"}, "params": {"instance_url": f"https://{PUBLIC}:{public.port}"}},
        )
    finally:
        await public.close()
    assert connect.status == 400, await connect.text()
    assert "too large" in (await connect.json())["message"]


async def test_a_flow_http_step_fails_on_a_gzip_bomb_instead_of_inflating_it(aiohttp_client, make_app, tls):
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)

    async def serve_bomb(request):
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    public = await _public_server(tls, {"/bomb": serve_bomb})
    app = make_app(allow_insecure_targets=False)
    app[SERVICES].outbound = app[SERVICES].outbound = strict_outbound(tls[1], max_decompressed_bytes=1024 * 1024)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    try:
        steps = [{"id": "get", "type": "http", "url": f"https://{PUBLIC}:{public.port}/bomb"}]
        created = await client.post("/connect/v1/flows", json={"name": "bomb", "steps": steps}, headers=ws["headers"])
        assert created.status == 201, await created.text()
        run = await client.post(f"/connect/v1/flows/{(await created.json())['id']}/test", json={}, headers=ws["headers"])
        assert run.status == 201, await run.text()
        execution = await run.json()
    finally:
        await public.close()
    assert execution["status"] == "failed" and "inflates beyond 1048576 bytes" in execution["error"]


#: IPv6 forms that translate to a private IPv4 address (SIIT ``::ffff:0:a.b.c.d``, the deprecated
#: IPv4-compatible ``::a.b.c.d``) or sit in the local-use NAT64 prefix ``64:ff9b:1::/48``, which is
#: not global whatever it embeds
IPV6_FORMS = [
    "::ffff:0:127.0.0.1",
    "::ffff:0:a9fe:a9fe",
    "::127.0.0.1",
    "::10.0.0.1",
    "::0.0.0.0",
    "64:ff9b:1::7f00:1",
    "64:ff9b:1::808:808",
    "64:ff9b:1:ffff::a9fe:a9fe",
]


async def _guarded_app(aiohttp_client, make_app):
    """An app with the deployment's own address rule (only globally routable addresses)."""
    app = make_app(allow_insecure_targets=False, plugins=[TenantHostPack()])
    client = await aiohttp_client(app)
    return client, await create_workspace_with_key(app)


@pytest.mark.parametrize("form", IPV6_FORMS)
async def test_an_ipv6_form_of_a_private_address_is_refused_as_an_alert_webhook(aiohttp_client, make_app, form):
    client, ws = await _guarded_app(aiohttp_client, make_app)
    alert = {"channel": "webhook", "target": f"https://[{form}]:8443/hook", "eventTypes": ["flow.failed"]}

    created = await client.post("/connect/v1/alerts", json=alert, headers=ws["headers"])

    body = await created.json()
    assert created.status == 400 and "private address" in body["message"], body
    assert await (await client.get("/connect/v1/alerts", headers=ws["headers"])).json() == []


@pytest.mark.parametrize("form", IPV6_FORMS)
async def test_an_ipv6_form_of_a_private_address_is_refused_to_a_flow_http_step(aiohttp_client, make_app, secret_server, form):
    server, hits = secret_server
    client, ws = await _guarded_app(aiohttp_client, make_app)
    steps = [{"id": "get", "type": "http", "url": f"https://[{form}]:{server.port}/latest/meta-data"}]
    created = await client.post("/connect/v1/flows", json={"name": form, "steps": steps}, headers=ws["headers"])
    assert created.status == 201, await created.text()
    run = await client.post(f"/connect/v1/flows/{(await created.json())['id']}/test", json={}, headers=ws["headers"])
    outcome = await run.json()
    assert run.status == 201 and outcome["status"] == "failed" and "private address" in outcome["error"], outcome
    assert hits == []
