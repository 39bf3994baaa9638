"""The bodies the integrations routes read and answer: the models that validate and serialize them
are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from patchbay.core.http.responses import response_model


@dataclass
class SaveIntegrationDto:
    """The body of ``PATCH /connect/v1/integrations/{providerType}`` and of its deployment twin. A
    field left out keeps its stored value; ``null`` removes it (the next level's value applies:
    the deployment's, then the settings file's). ``clientId`` and ``clientSecret`` (OAuth providers
    only) go together; ``clientSecret`` alone replaces the secret of the stored ``clientId``.
    ``webhookSecret`` and ``webhookVerifyToken`` are the deployment's only."""

    clientId: Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S")] | None = None
    """The OAuth app's client id."""
    clientSecret: Annotated[str, Field(min_length=1, max_length=4000, pattern=r"\S")] | None = None
    """The OAuth app's client secret: stored encrypted, never answered."""
    scopes: Annotated[list[Annotated[str, Field(pattern=r"^\S{1,500}$")]], Field(max_length=200)] | None = None
    """The scopes an authorization asks for when the caller names none."""
    apiBaseUrl: Annotated[str, Field(max_length=2000, pattern=r"^\s*https?://")] | None = None
    """The provider API's base URL for proxied calls (https; ``{param}`` placeholders name the
    provider's connection parameters)."""
    webhookSecret: Annotated[str, Field(min_length=1, max_length=4000, pattern=r"\S")] | None = None
    """The secret provider webhooks are verified with (deployment only)."""
    webhookVerifyToken: Annotated[str, Field(min_length=1, max_length=4000, pattern=r"\S")] | None = None
    """The token a provider's subscription handshake must echo (deployment only)."""


@response_model
class EffectiveIntegration:
    """What applies at this level, and where each value comes from: ``workspace``, ``deployment``
    (stored), ``file`` (the settings file) or ``definition`` (the provider's own)."""

    canConnect: bool
    oauthAppFrom: Literal["workspace", "deployment", "file"] | None
    clientId: str | None
    scopes: list[str]
    scopesFrom: Literal["workspace", "deployment", "file", "definition"] | None
    apiBaseUrl: str | None
    apiBaseUrlFrom: Literal["workspace", "deployment", "file", "definition"] | None
    receivesWebhooks: bool
    webhookUrl: str | None
    webhookSecretFrom: Literal["deployment", "file"] | None
    webhookVerifyTokenFrom: Literal["deployment", "file"] | None


@response_model
class IntegrationSettings:
    """A provider's settings stored at one level (``deployment`` or ``workspace``). Secrets are never
    answered: only whether they are set and a fingerprint (a keyed digest's first characters) that
    tells two secrets apart."""

    provider: str
    displayName: str
    authMode: str
    level: Literal["deployment", "workspace"]
    stored: bool
    clientId: str | None
    clientSecretSet: bool
    clientSecretFingerprint: str | None
    scopes: list[str] | None
    apiBaseUrl: str | None
    webhookSecretSet: bool
    webhookSecretFingerprint: str | None
    webhookVerifyTokenSet: bool
    webhookVerifyTokenFingerprint: str | None
    updatedAt: str | None
    effective: EffectiveIntegration


@response_model
class IntegrationSettingsList:
    """The providers with settings stored at the level, by name."""

    data: list[IntegrationSettings]


@response_model
class IntegrationSettingsDeleted:
    provider: str
    deleted: Literal[True]
