"""A local HTTP server standing in for an API-key provider whose API lives under the customer's
subdomain: ``GET /{subdomain}/me`` answers 200 for the right key, 401 otherwise."""

from __future__ import annotations

from aiohttp import web

from patchbay import Provider, hookimpl

API_KEY = "acme-secret-key-1"


class FakeKeys:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._runner: web.AppRunner | None = None
        self.base = ""

    async def me(self, request: web.Request) -> web.Response:
        self.calls.append((request.match_info["subdomain"], request.headers.get("Authorization", "")))
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return web.json_response({"error": "invalid key"}, status=401)
        return web.json_response({"account": request.match_info["subdomain"]})

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/{subdomain}/me", self.me)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self.base

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def definitions(base: str) -> list[Provider]:
    """``acmekeys``: an API key and a required subdomain; ``notesapp``: another API-key provider in
    another category; ``calendarly``: a gated-by-category CRM stand-in."""
    common = {"connection_param_defaults": {"server": base}, "health_check": "GET /me"}
    return [
        Provider(
            name="acmekeys",
            display_name="Acme Keys",
            category="crm",
            auth_mode="api_key",
            api_base_url="{server}/{subdomain}",
            connection_params=("server", "subdomain"),
            **common,
        ),
        Provider(
            name="notesapp",
            display_name="Notes App",
            category="productivity",
            auth_mode="api_key",
            api_base_url="{server}/notes",
            connection_params=("server",),
            **common,
        ),
    ]


class FakeKeysPack:
    def __init__(self, base: str) -> None:
        self.base = base

    @hookimpl
    def register_providers(self):
        return definitions(self.base)
