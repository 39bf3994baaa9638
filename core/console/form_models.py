"""The forms of the console's pages, as ``/openapi.json`` documents them. Every form carries
``csrf``, the session's token (``core.console.pages.action`` checks it before reading the rest)."""

from __future__ import annotations

from typing import Literal

from patchbay.core.http.openapi import form_model


@form_model
class SignOutForm:
    """The sign-out button."""

    csrf: str
    """The session's CSRF token."""


@form_model
class CsrfOnlyForm:
    """A button whose target is all it says (revoke this key, approve this request)."""

    csrf: str
    """The session's CSRF token."""


@form_model
class CreateKeyForm:
    """A new API key of the workspace."""

    csrf: str
    """The session's CSRF token."""
    name: str
    """What the key is for (shown in the list)."""
    access: Literal["all", "read"] = "all"
    """``all``: every permission; ``read``: the viewer role's (``*.view``)."""
    expiresInDays: str | None = None  # noqa: N815 (the form's field name)
    """Days until the key stops working (empty: never)."""


@form_model
class InviteForm:
    """An invitation to the workspace."""

    csrf: str
    """The session's CSRF token."""
    email: str
    """Who is invited."""
    role: Literal["viewer", "manager", "admin"] = "viewer"
    """The role they get when they accept."""


@form_model
class MemberRoleForm:
    """A member's new role in the workspace."""

    csrf: str
    """The session's CSRF token."""
    role: Literal["viewer", "manager", "admin"]
    """The role the member gets."""


@form_model
class DecisionForm:
    """Approve or deny an approval request."""

    csrf: str
    """The session's CSRF token."""
    note: str | None = None
    """Why (kept with the decision)."""


@form_model
class CreateAlertForm:
    """A new alert subscription."""

    csrf: str
    """The session's CSRF token."""
    channel: str
    """An installed alert channel (``email``, ``webhook``, ``chat``)."""
    target: str
    """Where the channel sends: an address or a URL."""
    event: str | None = None
    """An event type to alert on; repeat the field for each (none: ``flow.failed``)."""
