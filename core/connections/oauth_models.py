"""What the OAuth connection routes (``/auth/*``) and the BYOA credentials routes (``/byoa/*``)
answer in JSON; their pages and redirects are declared beside the handlers."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from patchbay.core.http.responses import response_model


@response_model
class LoginUrl:
    """A login asked for in JSON: where to send the browser (our ``/auth/{provider}/begin`` page,
    which binds the login to that browser) and until when it works."""

    authorizationUrl: str
    expiresAt: str


@response_model
class RefreshResult(TypedDict):
    """One connection's refresh: ``expiresAt`` when refreshed, ``reason`` when not."""

    connectionId: str
    refreshed: bool
    status: str
    expiresAt: NotRequired[str | None]
    reason: NotRequired[str]


@response_model
class Refreshed:
    """``success`` when every connection of the provider refreshed."""

    success: bool
    connections: list[RefreshResult]


@response_model
class DeauthorizeInfo:
    """What deauthorization does and where it is sent."""

    provider: str
    deauthorizeUrl: str
    description: str


@response_model
class Deauthorized:
    """How many connections were disconnected."""

    success: Literal[True]
    disconnected: int


@response_model
class ByoaStatus(TypedDict):
    """Whether the workspace has its own OAuth app for the provider; its facts when it has (never
    the secret)."""

    provider: str
    configured: bool
    clientId: NotRequired[str]
    scopes: NotRequired[list[str]]
    createdAt: NotRequired[str]
    updatedAt: NotRequired[str]


@response_model
class ByoaSaved(ByoaStatus):
    """The saved OAuth app."""

    success: Literal[True]


@response_model
class ByoaDeleted:
    success: Literal[True]
