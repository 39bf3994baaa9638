"""The form of a provider's connect step, from its definition: the credential fields its auth mode
needs and its connection parameters, each with a label and whether it is required."""

from __future__ import annotations

import attrs

from patchbay.core.plugins.provider import Provider

#: auth mode -> (field name, label, input type, required)
CREDENTIAL_FIELDS: dict[str, tuple[tuple[str, str, str, bool], ...]] = {
    "api_key": (("apiKey", "API key", "password", True),),
    "basic": (("apiKey", "Username", "text", True), ("apiSecret", "Password", "password", False)),
    "oauth2_cc": (("apiKey", "Client ID", "text", True), ("apiSecret", "Client secret", "password", True)),
    "none": (),
}
#: words spelled in capitals in a parameter's label
ACRONYMS = {"url": "URL", "id": "ID", "api": "API", "dc": "DC"}


@attrs.frozen
class Field:
    name: str
    label: str
    kind: str
    required: bool
    #: ``credentials`` or ``params``: where the submitted value goes
    group: str = "credentials"


def param_label(name: str) -> str:
    """``instance_url`` -> ``Instance URL``."""
    words = [word for word in name.replace("-", "_").split("_") if word]
    return " ".join(ACRONYMS.get(word, word.capitalize() if index == 0 else word) for index, word in enumerate(words))


def form_fields(provider: Provider) -> list[Field]:
    """The fields of the provider's connect step, credentials first, then the connection
    parameters the end user must give. A parameter with a default (a region, a server) is not
    asked: the customer sets it in the session's ``metadata``, so an end user cannot point the
    credentials at another server."""
    fields = [Field(name, label, kind, required) for name, label, kind, required in CREDENTIAL_FIELDS.get(provider.auth_mode, ())]
    for name in provider.connection_params:
        if name not in provider.connection_param_defaults:
            fields.append(Field(f"param:{name}", param_label(name), "text", True, group="params"))
    return fields
