"""The outbound client's guard against server-side request forgery."""

import pytest

from patchbay.core.outbound import Outbound, PublicOnlyResolver, UnsafeTarget, check_target


@pytest.mark.parametrize(
    "url",
    ["http://example.com/hook", "https://127.0.0.1/x", "https://10.0.0.5/x", "https://[::1]/x", "https://localhost/x",
     "https://169.254.169.254/latest", "ftp://example.com", "not a url"],
)  # fmt: skip
def test_unsafe_targets_are_refused(url):
    with pytest.raises(UnsafeTarget):
        check_target(url, allow_insecure=False)


def test_public_https_target_and_insecure_mode():
    assert check_target("https://hooks.example.com/in", allow_insecure=False)
    assert check_target("http://127.0.0.1:9000/in", allow_insecure=True)


async def test_resolver_drops_private_addresses():
    with pytest.raises(OSError, match="public address"):
        await PublicOnlyResolver().resolve("localhost", 443)


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
        with pytest.raises(Exception):  # refused before connecting
            await outbound.session.get(f"http://localhost:{server.port}/")
    finally:
        await outbound.close()
