"""The forms of the hosted connect page's steps (``core.connect_ui.pages``), as ``/openapi.json``
documents them. The fields after ``csrf`` are the provider's (``core.connect_ui.fields``)."""

from __future__ import annotations

from pydantic import ConfigDict, with_config

from patchbay.core.http.openapi import form_model

#: a connection parameter the end user gives, ``param:<name>`` (``instance_url``, say)
CONNECTION_PARAMETERS = ConfigDict(json_schema_extra={"patternProperties": {"^param:": {"type": "string"}}})


@with_config(CONNECTION_PARAMETERS)
@form_model
class CredentialsForm:
    """A provider's credential step: the credentials its auth mode needs, then its connection
    parameters as ``param:<name>`` fields (each required by the step)."""

    csrf: str
    """The page's CSRF token."""
    apiKey: str | None = None  # noqa: N815 (the form's field name)
    """The API key (``api_key``), the username (``basic``) or the client id (``oauth2_cc``):
    required by those auth modes."""
    apiSecret: str | None = None  # noqa: N815 (the form's field name)
    """The password (``basic``, optional) or the client secret (``oauth2_cc``, required)."""


@with_config(CONNECTION_PARAMETERS)
@form_model
class OAuthStartForm:
    """The OAuth step's button: the provider's connection parameters as ``param:<name>`` fields,
    passed to its login."""

    csrf: str
    """The page's CSRF token."""
