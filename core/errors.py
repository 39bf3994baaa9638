"""Domain errors: what a service raises when it refuses a request, without knowing about HTTP.
``core.http.errors`` is the one place that maps each kind to a status; ``message`` is what the
caller is told (a flow step that fails on one shows it as the step's error)."""

from __future__ import annotations


class DomainError(Exception):
    """A refusal with a message fit for the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(DomainError):
    """The input is not acceptable; the message names the field."""


class NotFound(DomainError):
    """The thing named does not exist (or belongs to another tenant)."""


class Conflict(DomainError):
    """The change collides with the current state (a slug or key already taken)."""


class Forbidden(DomainError):
    """The caller may not do this (a plan limit, a policy)."""


class PlanLimitExceeded(Forbidden):
    """The workspace's plan has no room for more of ``resource`` (``core.billing.limits``)."""

    def __init__(self, message: str, *, resource: str, plan: str, limit: int) -> None:
        super().__init__(message)
        self.resource, self.plan, self.limit = resource, plan, limit
