"""The shapes of the objects plugins register (see ``hookspecs``), as typed protocols.

A plugin author implements one of these (no base class needed); the registry checks each object
against its kind's contract when it is registered, so a missing method stops the start with an
error naming the plugin, instead of failing the first time the core calls it. Kinds with a base
class (``ProviderAuth``, ``WebhookHandler``, ``PaymentProvider``) or a record type (``Action``,
``Trigger``, ``RecordSource``) are checked against that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ProxyCustomizer(Protocol):
    """``register_proxy``: rewrites a provider's outgoing proxied call; both methods optional,
    at least one present."""

    def prepare(self, call: Any) -> None: ...

    def retry_after(self, response: Any) -> float | None: ...


@runtime_checkable
class CrmMapper(Protocol):
    """``register_crm_mappers``: reads a CRM as unified records; an optional ``resources`` tuple
    narrows the resources it offers."""

    async def list(self, client: Any, resource: str, limit: int, cursor: Any) -> tuple[list[dict[str, Any]], Any]: ...

    async def get(self, client: Any, resource: str, id: str) -> dict[str, Any] | None: ...


@runtime_checkable
class AlertChannel(Protocol):
    """``register_alert_channels``: delivers one flow alert to one target, raising on failure;
    optionally ``configuration_problem(settings) -> str | None``."""

    async def send(self, alert: Mapping[str, Any], target: str, context: Any) -> None: ...


@runtime_checkable
class CrmDestination(Protocol):
    """``register_crm_destinations``: pushes a lead into a CRM, answering the CRM's record id."""

    async def push(self, client: Any, lead: Mapping[str, Any]) -> str: ...

    async def test(self, client: Any) -> None: ...


@runtime_checkable
class FederatedLogin(Protocol):
    """``register_federated_login``: an upstream login protocol for the identity provider."""

    async def authorization_url(self, *, config: Any, http: Any, redirect_uri: str, state: str, nonce: str, code_challenge: str) -> str: ...

    async def complete(self, *, config: Any, http: Any, redirect_uri: str, code: str, code_verifier: str, nonce: str) -> dict[str, Any]: ...


@runtime_checkable
class StepType(Protocol):
    """``register_step_types``: a flow step; optionally ``prepare(config)`` and
    ``side_effects = False``."""

    async def run(self, context: Any, config: Mapping[str, Any]) -> Any: ...


@runtime_checkable
class DeauthorizationCallback(Protocol):
    """``register_deauthorization_callbacks``: the provider user named by a verified callback."""

    def user(self, form: Mapping[str, str], client_secret: str | None) -> str | None: ...


@runtime_checkable
class DeletionCallback(Protocol):
    """``register_deletion_callbacks``: ``field`` names the body field; ``subject`` verifies it."""

    field: str

    def subject(self, value: str, ctx: Any) -> str: ...


def _base_classes() -> dict[str, type | tuple[type, ...]]:
    from patchbay.core.billing.payments import PaymentProvider
    from patchbay.core.connections.auth import ProviderAuth
    from patchbay.core.plugins.types import Action, RecordSource, Trigger
    from patchbay.core.webhooks.protocol import WebhookHandler

    return {
        "auth": ProviderAuth,
        "webhooks": WebhookHandler,
        "payment_providers": PaymentProvider,
        "actions": Action,
        "triggers": Trigger,
        "record_sources": RecordSource,
        "flow_templates": dict,
        "deletion_identities": (tuple, list),
        "settings": type,
    }


#: the protocol each kind's objects follow (``core.plugins.registry`` kinds)
PROTOCOLS: dict[str, type] = {
    "proxy": ProxyCustomizer,
    "crm_mappers": CrmMapper,
    "alert_channels": AlertChannel,
    "crm_destinations": CrmDestination,
    "federated_login": FederatedLogin,
    "step_types": StepType,
    "deauthorization_callbacks": DeauthorizationCallback,
    "deletion_callbacks": DeletionCallback,
}


def contract_problem(kind: str, obj: object) -> str | None:
    """Why ``obj`` cannot serve as a ``kind`` object (the members it lacks, or the type it should
    have), or ``None`` when it can."""
    if kind == "proxy":
        present = [name for name in ("prepare", "retry_after") if callable(getattr(obj, name, None))]
        return None if present else "has neither prepare(call) nor retry_after(response)"
    protocol = PROTOCOLS.get(kind)
    if protocol is not None:
        missing = _missing_members(protocol, obj)
        return f"lacks {', '.join(missing)} (see patchbay.{protocol.__name__})" if missing else None
    expected = _base_classes().get(kind)
    if expected is None:
        return None
    if kind == "settings":
        return None if isinstance(obj, type) else "is not a class"
    if isinstance(obj, expected):
        return None
    names = " or ".join(kind.__name__ for kind in (expected if isinstance(expected, tuple) else (expected,)))
    return f"is of type {type(obj).__name__}, expected {names}"


def _missing_members(protocol: type, obj: object) -> Sequence[str]:
    members = {*getattr(protocol, "__annotations__", {}), *(name for name, value in vars(protocol).items() if callable(value))}
    members = {name for name in members if not name.startswith("_")}
    missing = []
    for name in sorted(members):
        value = getattr(obj, name, None)
        wanted_callable = callable(getattr(protocol, name, None))
        if value is None or (wanted_callable and not callable(value)):
            missing.append(f"{name}()" if wanted_callable else name)
    return missing
