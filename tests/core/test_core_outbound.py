"""The outbound client's guard against server-side request forgery."""

import pytest

from patchbay.core.outbound import Outbound, ResponseTooLarge, UnsafeTarget, check_target, inflate, is_public_address


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",
        "https://127.0.0.1/x",
        "https://10.0.0.5/x",
        "https://[::1]/x",
        "https://localhost/x",
        "https://169.254.169.254/latest",
        "ftp://example.com",
        "not a url",
        "http://[",
        "https://[::1/x",
    ],
)
def test_unsafe_targets_are_refused(url):
    with pytest.raises(UnsafeTarget):
        check_target(url, allow_insecure=False)


def test_public_https_target_and_insecure_mode():
    assert check_target("https://hooks.example.com/in", allow_insecure=False)
    assert check_target("http://127.0.0.1:9000/in", allow_insecure=True)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1%eth0",
        "ff02::1",
        "2002:7f00:1::",
        "64:ff9b::a9fe:a9fe",
        "::ffff:0:127.0.0.1",
        "::127.0.0.1",
        "::10.0.0.1",
        "64:ff9b:1::7f00:1",
        "64:ff9b:1::808:808",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    ],
)
def test_private_and_special_addresses_are_not_public(address):
    assert not is_public_address(address)


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "::ffff:0:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]
)
def test_global_unicast_addresses_are_public(address):
    assert is_public_address(address)


def test_inflate_stops_at_the_limit():
    import gzip
    import zlib

    assert inflate(gzip.compress(b"a" * 1000), "gzip", limit=1000) == b"a" * 1000
    assert inflate(zlib.compress(b"b" * 10), "deflate", limit=100) == b"b" * 10
    assert inflate(zlib.compress(b"c" * 10)[2:-4], "deflate", limit=100) == b"c" * 10  # raw deflate
    assert inflate(b"plain", "identity", limit=1) == b"plain"
    with pytest.raises(ResponseTooLarge):
        inflate(gzip.compress(b"a" * 1001), "gzip", limit=1000)


async def test_guarded_session_cannot_reach_loopback_by_name(aiohttp_server):
    from aiohttp import web

    app = web.Application()

    async def secret(request):
        return web.Response(text="secret")

    app.router.add_get("/", secret)
    server = await aiohttp_server(app)
    outbound = Outbound(allow_insecure=False)
    await outbound.start()
    try:
        with pytest.raises(Exception):  # noqa: B017 - refused before connecting, whichever error the guard raises
            await outbound.session.get(f"http://localhost:{server.port}/")
    finally:
        await outbound.close()


def test_outbound_caps_are_settings(make_app):
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.settings import load_settings

    settings = load_settings({}, {"PATCHBAY_OUTBOUND_STREAM_IDLE_SECONDS": "5", "PATCHBAY_OUTBOUND_MAX_RESPONSE_BYTES": "1000"})
    assert settings.outbound.stream_idle_seconds == 5 and settings.outbound.max_response_bytes == 1000
    assert settings.outbound.call_timeout_seconds == 30 and settings.outbound.max_decompressed_bytes == 50 * 1024 * 1024
    app = make_app(outbound=settings.outbound)
    assert app[SERVICES].outbound.limits.stream_idle_seconds == 5
    assert app[SERVICES].outbound.stream_timeout().total is None and app[SERVICES].outbound.stream_timeout().sock_read == 5
