"""The form of a provider's connect step, from its connect facts (:mod:`patchbay.core.connections.facts`):
the credential fields its credential takes and the connection parameters an end user must give,
each with the provider's own words for it, a line of help and whether it is required. The facts
decide the required-ness, so the form and the connect route (which refuses a body without a
required field) cannot disagree."""

from __future__ import annotations

import re

import attrs

from patchbay.core.connections.facts import brand_logo, connection_parameters, credential_fields, logo_path
from patchbay.core.plugins.provider import Provider

#: a connection parameter that is a second secret (Datadog's ``applicationKey``) is typed like a password
_SECRET_PARAM = re.compile(r"(?<!project)(?<!board)(key|secret|token|password)$", re.IGNORECASE)


@attrs.frozen
class Field:
    name: str
    label: str
    kind: str
    required: bool
    #: ``credentials`` or ``params``: where the submitted value goes
    group: str = "credentials"
    #: where the end user finds the value
    help: str | None = None


def form_fields(provider: Provider) -> list[Field]:
    """The fields of the provider's connect step, credentials first, then the connection
    parameters the end user must give. A parameter with a default (a region, a server) or one the
    definition names optional (used only when given) is not asked: the customer sets it in the
    session's ``metadata``, so an end user cannot point the credentials at another server; nor is
    an instance URL an OAuth provider hands out with its tokens."""
    fields = [
        Field(field["name"], field["label"], "password" if field["secret"] else "text", field["required"], help=field["help"])
        for field in credential_fields(provider)
        if field["asked"]
    ]
    for param in connection_parameters(provider):
        if param["required"] and not _handed_out(provider, param["name"]):
            kind = "password" if _SECRET_PARAM.search(param["name"]) else "text"
            fields.append(Field(f"param:{param['name']}", param["label"], kind, True, group="params", help=param["help"]))
    return fields


def _handed_out(provider: Provider, name: str) -> bool:
    """Whether an OAuth provider hands the parameter out in its token response: an instance URL
    that starts the API's address (Salesforce's ``instance_url``, Pipedrive's ``api_domain``), so
    the end user is not asked for it."""
    return provider.auth_mode == "oauth2" and provider.api_base_url.startswith("{" + name + "}")


def logo_url(provider: Provider) -> str | None:
    """Where the provider's brand icon is served, when it has one; the pages draw a monogram in
    the customer's colour otherwise."""
    return logo_path(provider) if brand_logo(provider) else None
