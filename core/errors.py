"""Domain errors: what a service raises when it refuses a request, without knowing about HTTP.
``core.http.errors`` is the one place that maps each kind to a status; ``message`` is what the
caller is told (a flow step that fails on one shows it as the step's error)."""

from __future__ import annotations


class DomainError(Exception):
    """A refusal with a message fit for the caller. ``headers``: what the answer must also carry
    (a ``Retry-After``, a ``WWW-Authenticate`` challenge), whatever the protocol."""

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})


class Invalid(DomainError):
    """The input is not acceptable; the message names the field."""


class NotFound(DomainError):
    """The thing named does not exist (or belongs to another tenant)."""


class Conflict(DomainError):
    """The change collides with the current state (a slug or key already taken)."""


class Unauthenticated(DomainError):
    """No credential, or one that does not prove who the caller is."""


class UnsupportedMediaType(Invalid):
    """The body is of a kind this operation does not read."""


class RequestTimeout(DomainError):
    """The caller's request stopped arriving (a streamed body went quiet) before it could be sent on."""


class RateLimited(DomainError):
    """Too many requests; ``retry_after`` seconds until the next is accepted (sent as ``Retry-After``)."""

    def __init__(self, message: str, *, retry_after: float, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, headers={**(headers or {}), "Retry-After": str(max(1, round(retry_after)))})
        self.retry_after = retry_after


class UpstreamFailed(DomainError):
    """A provider or another service this one called failed or answered what cannot be used."""


class Unavailable(DomainError):
    """This service cannot take the request now (storage down, shutting down); retry later."""


class Forbidden(DomainError):
    """The caller may not do this (a plan limit, a policy)."""


class PlanLimitExceeded(Forbidden):
    """The workspace's plan has no room for more of ``resource`` (``core.billing.limits``)."""

    def __init__(self, message: str, *, resource: str, plan: str, limit: int) -> None:
        super().__init__(message)
        self.resource, self.plan, self.limit = resource, plan, limit
