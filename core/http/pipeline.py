"""Every request's way through the app, as one middleware: one coroutine per request instead of a
layer per concern. In order:

1. the request id (``X-Request-Id``, taken from the caller when sane) and the clock start;
2. a path or query holding NUL refused (``core.http.bodies.refuse_nul``);
3. the connect API's throttle (``core.http.middleware.throttle``);
4. the body bounded by the caller's limit (``core.http.bodies.bounded``);
5. the handler;

any error of steps 2 to 5 answered in the API's error envelope (``core.http.errors.answer_for``),
the answer stamped with the request id and the headers registered for its path
(:func:`register_answer_headers`), and counted for ``/metrics`` by route and final status
(``core.http.metrics.count_answer``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from aiohttp import web

from patchbay.core.appkeys import ANSWER_HEADERS, SERVICES
from patchbay.core.http.bodies import bounded, refuse_nul
from patchbay.core.http.errors import answer_for
from patchbay.core.http.metrics import count_answer
from patchbay.core.http.middleware import assign_request_id, throttle


def register_answer_headers(app: web.Application, applies: Callable[[str], bool], headers: Mapping[str, str]) -> None:
    """Set ``headers`` on the answers to requests whose path ``applies`` (unless the answer sets
    them itself), error envelopes and redirects included; before the app starts. One check per
    request, where a response-prepare signal would cost every request a coroutine. An answer a
    handler streams has sent its headers before the pipeline sees it, and gets none."""
    app.setdefault(ANSWER_HEADERS, []).append((applies, headers))


def _add_answer_headers(app: web.Application, path: str, response: web.StreamResponse) -> None:
    for applies, headers in app.get(ANSWER_HEADERS, ()):
        if applies(path) and not response.prepared:
            for name, value in headers.items():
                response.headers.setdefault(name, value)


@web.middleware
async def request_pipeline(request: web.Request, handler) -> web.StreamResponse:
    app = request.app
    services = app[SERVICES]
    started = time.perf_counter()
    status = 500
    try:
        request_id = assign_request_id(request)
        try:
            refuse_nul(request)
            await throttle(request, services)
            response = await handler(await bounded(request, services.settings))
        except Exception as error:
            response = answer_for(request, error)
        response.headers["X-Request-Id"] = request_id
        _add_answer_headers(app, request.path, response)
        status = response.status
        return response
    except web.HTTPException as error:  # a redirect, sent as it is
        status = error.status
        _add_answer_headers(app, request.path, error)
        raise
    finally:
        count_answer(services, request, status, time.perf_counter() - started)
