"""Errors of the HTTP layer, and :func:`answer_for`, the request pipeline's step that gives every
error its documented shape.

The connect API answers ``{"statusCode": int, "message": str}`` (contract section 4) and never a
stack trace. Features whose errors have another shape (the identity provider's
``{error, error_description}``) register a formatter for their path prefix with
:func:`register_error_format`, on their app: two apps in one process never share them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from aiohttp import web
from sqlalchemy.orm.exc import StaleDataError

from patchbay.core.appkeys import ERROR_FORMATS, PRINCIPAL, REQUEST_ID
from patchbay.core.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotFound,
    RateLimited,
    RequestTimeout,
    Unauthenticated,
    Unavailable,
    UnsupportedMediaType,
    UpstreamFailed,
)

log = logging.getLogger(__name__)


class ApiError(web.HTTPException):
    """Raise to answer ``status`` with ``message`` in the error envelope."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        super().__init__(headers=headers, reason=None, text=message)
        self.message = message


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str = "Not Found") -> ApiError:
    return ApiError(404, message)


def unauthorized(message: str) -> ApiError:
    """401 with ``message``: ``Unauthorized: <why>; send <the credential expected>`` (no bare
    "Unauthorized": a caller is told which credential the route takes)."""
    return ApiError(401, message)


def forbidden(message: str = "Forbidden") -> ApiError:
    return ApiError(403, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


Formatter = Callable[[int, str, web.Request], web.Response]


def connect_api_error(status: int, message: str, _request: web.Request) -> web.Response:
    return web.json_response({"statusCode": status, "message": message}, status=status)


#: the status of each kind of domain error (``core.errors``; a subclass answers its base's status:
#: ``PlanLimitExceeded`` is a ``Forbidden``, 403)
DOMAIN_STATUS: dict[type[DomainError], int] = {
    UnsupportedMediaType: 415,
    Invalid: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    RequestTimeout: 408,
    Conflict: 409,
    RateLimited: 429,
    UpstreamFailed: 502,
    Unavailable: 503,
}


def domain_status(error: DomainError) -> int:
    return next((status for kind, status in DOMAIN_STATUS.items() if isinstance(error, kind)), 400)


def register_error_format(app: web.Application, prefix: str, formatter: Formatter) -> None:
    """Answer the errors of paths under ``prefix`` with ``formatter`` (before the app starts)."""
    app.setdefault(ERROR_FORMATS, []).append((prefix, formatter))


def body_limit_setting(request: web.Request) -> str:
    """The setting that bounds this request's body (``core.http.bodies.bounded``
    chose it from whether the caller presented a valid credential, remembered on the request)."""
    if request.get(PRINCIPAL) is not None:
        return "the limit for a caller with a valid credential is the `max_body_bytes` setting (PATCHBAY_MAX_BODY_BYTES)"
    return "the limit for a caller without a valid credential is the `max_unauthenticated_body_bytes` setting (PATCHBAY_MAX_UNAUTHENTICATED_BODY_BYTES)"


def error_response(request: web.Request, status: int, message: str, headers=None) -> web.Response:
    if status == 413:
        message = f"{message.rstrip('.')}: {body_limit_setting(request)}"
    formats: list[tuple[str, Formatter]] = request.app.get(ERROR_FORMATS, [])
    formatter = next((fmt for prefix, fmt in formats if request.path.startswith(prefix)), connect_api_error)
    response = formatter(status, message, request)
    for name, value in (headers or {}).items():
        if name.lower() not in ("content-type", "content-length"):
            response.headers[name] = value
    return response


def answer_for(request: web.Request, error: Exception) -> web.StreamResponse:
    """The error envelope that answers ``error`` raised while handling ``request``; an
    ``HTTPException`` below 400 (a redirect) is raised again, to be sent as it is."""
    if isinstance(error, ApiError):
        return error_response(request, error.status_code, error.message, error.headers)
    if isinstance(error, DomainError):
        return error_response(request, domain_status(error), error.message, error.headers or None)
    if isinstance(error, web.HTTPException):
        if error.status_code < 400:
            raise error
        if isinstance(error, web.HTTPRequestEntityTooLarge) and error.text:  # "Maximum request body size N exceeded."
            return error_response(request, 413, error.text, error.headers)
        return error_response(request, error.status_code, error.reason, error.headers)
    if isinstance(error, json.JSONDecodeError):
        return error_response(request, 400, "Malformed JSON body")
    if isinstance(error, StaleDataError):  # a concurrent request deleted or changed the row this one was updating
        return error_response(request, 409, "The resource was changed or deleted by another request: try again")
    log.error("unhandled error in %s %s (request %s)", request.method, request.path, request.get(REQUEST_ID), exc_info=error)
    return error_response(request, 500, "Internal Server Error")
