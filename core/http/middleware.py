"""Request ids, structured access logs and the connect API's request throttle."""

from __future__ import annotations

import base64
import functools
import itertools
import logging
import os
import re
import threading
import time
import weakref
from json import encoder as json_encoder

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from patchbay.core.appkeys import REQUEST_ID
from patchbay.core.http.client_address import client_address
from patchbay.core.http.errors import ApiError
from patchbay.core.ratelimit.limiter import parse_limit
from patchbay.core.security.auth import identify

#: JSON string literal of a str, quoted and escaped as ``json.dumps`` does (the C encoder)
_json_string = json_encoder.encode_basestring_ascii

_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


class RequestIds:
    """Request ids: 16 URL-safe characters, unique, not secret. Ten are drawn from the system's
    randomness (60 bits) per process, and again in a forked child and after every 16,777,216 ids;
    the last six count the ids made with them, in hexadecimal. An id costs a counter step and one
    formatted integer instead of random bytes encoded each time."""

    SPAN = 1 << 24  # ids per drawn prefix: six hexadecimal digits

    def __init__(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        self._prefix = base64.urlsafe_b64encode(os.urandom(9)).decode()[:10]
        self._count = itertools.count()

    def new(self) -> str:
        number = next(self._count)
        if number >= self.SPAN:
            self.redraw()
            number = next(self._count)
        return f"{self._prefix}{number:06x}"


_request_ids = RequestIds()
os.register_at_fork(after_in_child=_request_ids.redraw)
new_request_id = _request_ids.new


#: Paths under the connect API's throttle. The identity provider has its own limits, and inbound
#: webhooks are never throttled (a provider's burst must be stored, not refused).
THROTTLED_PREFIXES = ("/connect/v1/", "/api/", "/leads", "/crm/", "/byoa/", "/accounts", "/auth/")
UNTHROTTLED_PREFIXES = ("/api/v1/oidc/", "/api/cron/")


def assign_request_id(request: web.Request) -> str:
    """The caller's ``X-Request-Id`` when it is a sane one, else a new id; kept on the request (logs,
    errors) and sent back on the answer."""
    incoming = request.headers.get("X-Request-Id", "")
    request_id = request[REQUEST_ID] = incoming if _REQUEST_ID_OK.match(incoming) else new_request_id()
    return request_id


async def throttle(request: web.Request, services) -> None:
    """The connect API's limit per workspace (per client address without a valid credential): 429
    past it."""
    path = request.path
    if not path.startswith(THROTTLED_PREFIXES) or path.startswith(UNTHROTTLED_PREFIXES):
        return
    item = parse_limit(services.settings.rate_limits["connect_api"])
    if item is None:
        return
    principal = await identify(request)  # the pipeline's first step that asks
    key = f"connect:ws:{principal.workspace_id}" if principal and principal.workspace_id else f"connect:ip:{client_address(request)}"
    limiter = services.rate_limiter
    if limiter.take_reserved(key, item):
        return
    decision = await limiter.hit(key, item)
    if not decision.allowed:
        raise ApiError(429, "ThrottlerException: Too Many Requests", headers={"Retry-After": str(decision.retry_after)})


#: Route variables whose values are credentials (invite and link tokens, codes, keys): never logged.
_SECRET_VARIABLE = re.compile(r"(token|secret|code|password|api_?key)$", re.IGNORECASE)
REDACTED = "[redacted]"


@functools.lru_cache(maxsize=4096)
def _secret_variables(resource: web.AbstractResource) -> frozenset[str]:
    """The credential-like ones of a route's variable names, once per route."""
    names = re.findall(r"\{([^}:]+)", resource.canonical)
    return frozenset(name for name in names if _SECRET_VARIABLE.search(name))


def loggable_path(request: web.BaseRequest) -> str:
    """The request's path with credential-like route variables replaced; the query is never
    logged (OAuth codes, states and link tokens travel there)."""
    match_info = getattr(request, "match_info", None)
    resource = getattr(getattr(match_info, "route", None), "resource", None)
    if resource is None or not match_info:
        return request.path
    secrets = _secret_variables(resource)
    if not secrets:
        return request.path
    values = {name: REDACTED if name in secrets else value for name, value in match_info.items()}
    try:
        return resource.url_for(**values).path.replace("%5Bredacted%5D", REDACTED)
    except (KeyError, ValueError, TypeError):
        return resource.canonical


class JsonAccessLogger(AbstractAccessLogger):
    """One JSON line per request: method, path (credentials redacted), status, duration, request
    id, client address (trusted proxies honoured).

    The line is the text ``json.dumps`` makes of those fields, except that the two numbers have a
    fixed count of decimals (``ts`` seconds with 3, ``duration_ms`` with 2: a fixed-point format
    costs a third of the shortest round-trip text of a rounded float); strings are written with
    the JSON encoder's C string quoting. It is handed to the logger as a ready record: no stack walk
    for the caller's file and line (``Logger.info`` does one per call), nothing the access line
    would use."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, duration: float) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        request_id = request.get(REQUEST_ID)
        now = time.time()
        line = (
            f'{{"ts": {now:.3f}, "request_id": {"null" if request_id is None else _json_string(request_id)}, '
            f'"method": {_json_string(request.method)}, "path": {_json_string(loggable_path(request))}, "status": {int(response.status)}, '
            f'"duration_ms": {duration * 1000:.2f}, "remote": {_json_string(client_address(request))}}}'
        )
        handler = sole_batching_handler(logger)
        if handler is not None:  # the one place the line goes: written as its formatter would, without a record
            handler.add_line(f"{handler.formatter.time_text(now)} INFO {logger.name} {line}")
            return
        logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, line, None, None))

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


# ---------------------------------------------------------------------------------------------
# The process's logging, as the CLI's commands set it up
# ---------------------------------------------------------------------------------------------

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class LogFormatter(logging.Formatter):
    """``logging.Formatter`` with the date part of ``asctime`` made once per second (``strftime``
    and ``localtime`` on every line are a third of formatting an access line)."""

    #: (second, its text), replaced as one object: threads that log share it safely
    _date: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return self.time_text(record.created, record.msecs)

    def time_text(self, created: float, msecs: float | None = None) -> str:
        """``asctime`` of a record made at ``created`` (``msecs`` as ``LogRecord`` computes it)."""
        second = int(created)
        date = self._date
        if date[0] != second:
            date = self._date = (second, time.strftime(self.default_time_format, self.converter(second)))
        if msecs is None:  # the access line's way: the same text as ``default_msec_format`` makes
            return f"{date[1]},{int((created - second) * 1000):03d}"
        return self.default_msec_format % (date[1], msecs)


#: lines a :class:`BatchingHandler` keeps before it writes them at once
BATCH_LINES = 256
#: the longest a line waits in a :class:`BatchingHandler` before it is written
BATCH_SECONDS = 0.2


class BatchingHandler(logging.StreamHandler):
    """A ``StreamHandler`` (standard error, or a file) that writes its lines in batches: every
    ``BATCH_SECONDS`` (a daemon thread), every ``BATCH_LINES`` lines, at once for a record of
    level WARNING or above (after the lines before it), and at ``flush()``/``close()`` (which
    ``logging.shutdown`` calls at exit). One write and flush per batch instead of per line: a
    busy server's access log costs a system call per request otherwise. A line is written at most
    ``BATCH_SECONDS`` late; a process killed outright (SIGKILL) loses at most that much log."""

    def __init__(self, stream=None, *, filename: str | os.PathLike[str] | None = None) -> None:
        self._file = open(filename, "a", encoding="utf-8") if filename is not None else None  # noqa: SIM115 (closed by close())
        super().__init__(self._file if self._file is not None else stream)
        self._lines: list[str] = []
        self._start_writer()
        _batching_handlers.add(self)

    def _start_writer(self) -> None:
        """The lock and the thread writing every ``BATCH_SECONDS`` (again in a forked child, which
        inherits no thread and perhaps a lock held by one)."""
        self._pending = threading.Lock()
        self._stopped = threading.Event()
        self._writer = threading.Thread(target=self._write_periodically, name="log-batches", daemon=True)
        self._writer.start()

    def _after_fork(self) -> None:
        if not self._stopped.is_set():
            self._start_writer()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.add_line(line, now=record.levelno >= logging.WARNING)

    def add_line(self, line: str, *, now: bool = False) -> None:
        """Queue one formatted line (written with the next batch, or at once with ``now``)."""
        with self._pending:
            self._lines.append(line)
            full = len(self._lines) >= BATCH_LINES
        if now or full:
            self.flush()

    def flush(self) -> None:
        with self._pending:
            lines, self._lines = self._lines, []
        if not lines:
            return
        self.acquire()
        try:
            stream = self.stream
            if stream is not None and not getattr(stream, "closed", False):
                stream.write("\n".join(lines) + "\n")
                stream.flush()
        except Exception:  # as StreamHandler: a failing log never fails the caller
            self.handleError(logging.makeLogRecord({"msg": lines[-1]}))
        finally:
            self.release()

    def _write_periodically(self) -> None:
        while not self._stopped.wait(BATCH_SECONDS):
            self.flush()

    def close(self) -> None:
        self._stopped.set()
        try:
            self.flush()
        finally:
            if self._file is not None:
                self._file.close()
            super().close()


_batching_handlers: weakref.WeakSet[BatchingHandler] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [handler._after_fork() for handler in list(_batching_handlers)])


def sole_batching_handler(logger: logging.Logger) -> BatchingHandler | None:
    """The :class:`BatchingHandler` (with a :class:`LogFormatter` of ``LOG_FORMAT``) that is the only
    place an INFO record of ``logger`` would go, with no filter on the way; else None (a test's
    capturing handler, a second handler, another format: the record is then made as usual)."""
    node: logging.Logger | None = logger
    while node is not None:
        if node.filters:
            return None
        handlers = node.handlers
        if handlers:
            if len(handlers) != 1:
                return None
            handler = handlers[0]
            if (
                node is logging.root
                and type(handler) is BatchingHandler
                and not handler.filters
                and handler.level <= logging.INFO
                and type(handler.formatter) is LogFormatter
                and handler.formatter._fmt == LOG_FORMAT
                and handler.formatter.datefmt is None
            ):
                return handler
            return None
        if not node.propagate:
            return None
        node = node.parent  # type: ignore[assignment]
    return None


def configure_logging(level: str, *, filename: str | os.PathLike[str] | None = None) -> None:
    """The root logger at ``level`` writing ``LOG_FORMAT`` lines to standard error (or ``filename``)
    in batches (:class:`BatchingHandler`). Records skip what no line of ours shows (thread and process names), a few microseconds each."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = BatchingHandler(filename=filename)
    handler.setFormatter(LogFormatter(LOG_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
