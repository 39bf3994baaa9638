"""What an end user must supply to connect a provider, derived from its definition: the credential
fields of the connect body (``credentials.apiKey`` / ``apiSecret``) with labels that fit its auth
mode, its connection parameters with their defaults, and where its API and documentation live.
The provider API's detail and the hosted connect pages render the same facts."""

from __future__ import annotations

import hashlib
from typing import Any
from xml.sax.saxutils import escape

from patchbay.core.plugins.provider import Provider, template_fields

#: labels of the connect body's two credential fields, by auth mode
_CREDENTIAL_LABELS = {
    "api_key": ("API key", "API secret"),
    "basic": ("Username", "Password"),
    "oauth2_cc": ("Client ID", "Client secret"),
}


#: words spelled in capitals in a parameter's label
_ACRONYMS = {"url": "URL", "id": "ID", "api": "API", "dc": "DC"}


def _templates(provider: Provider) -> set[str]:
    used: set[str] = set()
    for template in (*provider.credential_headers.values(), *provider.credential_query.values()):
        used |= template_fields(template)
    return used


def _secret_used(provider: Provider) -> bool:
    """Whether the provider's credential takes the connect body's second field: the templates use
    it (or, without templates, the auth mode's own header does)."""
    if provider.auth_mode == "oauth2_cc":
        return True
    used = _templates(provider)
    if provider.auth_mode == "basic":
        if provider.basic_pair is not None:
            return "password" in used or "basic" in used and "password" in template_fields(provider.basic_pair)
        return "password" in used or "basic" in used or not (provider.credential_headers or provider.credential_query)
    return "api_secret" in used


def _key_is_basic_password(provider: Provider) -> bool:
    """Whether the asked key is sent where Basic's password goes (lemlist's ``:{username}``)."""
    return provider.basic_pair is not None and "password" not in template_fields(provider.basic_pair)


def credential_fields(provider: Provider) -> list[dict[str, Any]]:
    """The ``credentials`` fields the connect route takes for this provider (none for OAuth, which
    connects through the login flow, or for a public API), with the definition's words for them.
    This is where a field's required-ness is decided: the connect route refuses a body without a
    required one and the connect form asks each one it marks (``asked``) the same way."""
    labels = _CREDENTIAL_LABELS.get(provider.auth_mode)
    if labels is None:
        return []
    secret_used = _secret_used(provider)
    fields = [
        # a Basic username and a client ID are names, not secrets, unless the key is the username (Stripe)
        {
            "name": "apiKey",
            "label": labels[0],
            "required": True,
            "secret": provider.auth_mode == "api_key" or provider.basic_password is not None or _key_is_basic_password(provider),
            "asked": True,
        },
        {"name": "apiSecret", "label": labels[1], "required": secret_used, "secret": True, "asked": secret_used},
    ]
    for field in fields:
        field["label"] = provider.field_labels.get(field["name"], field["label"])
        field["help"] = provider.field_help.get(field["name"])
        if field["name"] in provider.optional_fields:
            field["required"] = False
    if provider.basic_password is not None:
        fields.pop()  # the password is the definition's: only the key is asked
    return fields


def _label(name: str) -> str:
    words = name.replace("-", "_").split("_")
    return " ".join(_ACRONYMS.get(word, word.capitalize() if index == 0 else word) for index, word in enumerate(words) if word)


def connection_parameters(provider: Provider) -> list[dict[str, Any]]:
    """The connection parameters (``params``), each required unless the definition has a default
    for it or names it optional (``optional_fields``: used only when given)."""
    return [
        {
            "name": name,
            "label": provider.field_labels.get(name) or _label(name),
            "required": name not in provider.connection_param_defaults and name not in provider.optional_fields,
            "default": provider.connection_param_defaults.get(name),
            "help": provider.field_help.get(name),
        }
        for name in provider.connection_params
    ]


def logo_path(provider: Provider) -> str:
    """Where the provider's logo is served (``GET`` without credentials, an SVG)."""
    return f"/connect/v1/providers/{provider.name}/logo.svg"


def brand_logo(provider: Provider) -> str | None:
    """The provider's brand icon where the built-in catalog ships one (an SVG), else None."""
    from patchbay.providers.catalog import logo  # the catalog's data; core does not need it to start

    return logo(provider.name)


def logo_svg(provider: Provider) -> str:
    """The provider's brand icon (:func:`brand_logo`), else :func:`monogram_svg`."""
    return brand_logo(provider) or monogram_svg(provider)


def monogram_svg(provider: Provider) -> str:
    """A monogram logo: the display name's initials on a colour chosen by the provider's name, so
    every provider has a stable, recognisable mark without fetching a third party's artwork."""
    words = [word for word in provider.display_name.replace("-", " ").split() if word[:1].isalnum()] or [provider.name]
    initials = escape("".join(word[0] for word in words[:2]).upper())
    hue = int(hashlib.sha256(provider.name.encode()).hexdigest()[:4], 16) % 360
    label = escape(provider.display_name, {'"': "&quot;"})
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img" aria-label="{label}">'
        f'<rect width="64" height="64" rx="12" fill="hsl({hue},55%,42%)"/>'
        f'<text x="32" y="41" font-family="sans-serif" font-size="24" font-weight="600" fill="#fff" text-anchor="middle">{initials}</text></svg>'
    )


def connect_facts(provider: Provider, base_url: str = "") -> dict[str, Any]:
    """Everything a person (or a form) needs to connect ``provider``; ``base_url`` makes the logo's
    address absolute."""
    return {
        "method": "oauth" if provider.requires_oauth else ("none" if provider.auth_mode == "none" else "credentials"),
        "credentials": credential_fields(provider),
        "connectionParams": connection_parameters(provider),
        "scopes": list(provider.scopes),
        "apiBaseUrl": provider.api_base_url,
        "docsUrl": provider.docs_url,
        "webhooks": provider.webhooks,
        "logoUrl": base_url.rstrip("/") + logo_path(provider),
    }
