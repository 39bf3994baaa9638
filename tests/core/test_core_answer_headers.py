"""Headers registered for a path (``register_answer_headers``) are set by the request pipeline on
every answer to that path: the handler's, an error envelope, a redirect; never on other paths, and
never over a header the answer sets itself."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.http.pipeline import register_answer_headers

EXTRA = {"X-Extra": "yes", "X-Other": "default"}


async def test_registered_headers_reach_every_answer_of_their_paths(aiohttp_client, make_app):
    app = make_app()

    async def plain(_request):
        return web.json_response({"ok": True}, headers={"X-Other": "own"})

    async def moved(_request):
        raise web.HTTPFound("/elsewhere")

    async def broken(_request):
        raise web.HTTPBadRequest()

    app.router.add_get("/extra/plain", plain)
    app.router.add_get("/extra/moved", moved)
    app.router.add_get("/extra/broken", broken)
    app.router.add_get("/plain", plain)
    register_answer_headers(app, lambda path: path.startswith("/extra/"), EXTRA)
    client = await aiohttp_client(app)

    answers = {path: await client.get(path, allow_redirects=False) for path in ("/extra/plain", "/extra/moved", "/extra/broken", "/extra/none", "/plain")}
    assert [answers[path].status for path in answers] == [200, 302, 400, 404, 200]
    for path in ("/extra/plain", "/extra/moved", "/extra/broken", "/extra/none"):
        assert answers[path].headers["X-Extra"] == "yes", path
    assert answers["/extra/plain"].headers["X-Other"] == "own"
    assert answers["/extra/moved"].headers["X-Other"] == "default"
    assert "X-Extra" not in answers["/plain"].headers
