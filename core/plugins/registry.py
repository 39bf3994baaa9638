"""The registry: every provider definition and every registered plugin object, loaded once.

The application, the flow engine, the identity provider and the CLI all read the same registry; it
lives on the app (``appkeys.REGISTRY``), never in a module global.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import pluggy

from patchbay.core.plugins.provider import DefinitionError, Provider

#: Hooks whose objects are keyed by one name (a second registration is an error).
SINGLE_KINDS = (
    "auth",
    "proxy",
    "webhooks",
    "crm_mappers",
    "alert_channels",
    "crm_destinations",
    "payment_providers",
    "federated_login",
    "step_types",
)
#: Hooks whose objects are keyed by provider name and then by the object's own name.
MULTI_KINDS = {"actions": "name", "triggers": "name", "record_sources": "resource_type"}

#: Keys of ``[providers.<name>]`` that are deployment secrets, not definition fields.
PROVIDER_SECRET_KEYS = frozenset({"client_id", "client_secret", "webhook_verify_token", "webhook_secret"})


class PluginError(RuntimeError):
    """A plugin is broken; the message names the plugin (pack) and what is wrong."""


@attrs.frozen
class ProviderSecrets:
    """The deployment's own credentials for a provider, from ``[providers.<name>]``."""

    client_id: str | None = None
    client_secret: str | None = None
    webhook_verify_token: str | None = None
    webhook_secret: str | None = None


class Registry:
    """Provider definitions and plugin objects by kind; see ``hookspecs`` for the kinds."""

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self.provider_pack: dict[str, str] = {}
        self.secrets: dict[str, ProviderSecrets] = {}
        self._objects: dict[str, dict[str, Any]] = {kind: {} for kind in (*SINGLE_KINDS, *MULTI_KINDS)}
        self._owners: dict[tuple[str, str], str] = {}

    # -- lookups --------------------------------------------------------------------------------

    def provider(self, name: str) -> Provider | None:
        return self.providers.get(name)

    def objects(self, kind: str) -> dict[str, Any]:
        """All objects of one kind, by key (for multi kinds: provider -> name -> object)."""
        return self._objects[kind]

    def get(self, kind: str, key: str) -> Any:
        """The object of ``kind`` registered under ``key`` (a dict for multi kinds), or None."""
        return self._objects[kind].get(key)

    def provider_secrets(self, name: str) -> ProviderSecrets:
        return self.secrets.get(name, ProviderSecrets())

    # -- loading --------------------------------------------------------------------------------

    def add_provider(self, provider: Provider, pack: str) -> None:
        if not isinstance(provider, Provider):
            raise PluginError(f"plugin {pack!r}: register_providers returned {provider!r}, not a Provider")
        try:
            provider.validate()
        except DefinitionError as error:
            raise PluginError(f"plugin {pack!r}: {error}") from None
        if provider.name in self.providers:
            other = self.provider_pack[provider.name]
            raise PluginError(f"plugin {pack!r}: provider {provider.name!r} is already defined by plugin {other!r}")
        self.providers[provider.name] = provider
        self.provider_pack[provider.name] = pack

    def add_object(self, kind: str, key: str, obj: Any, plugin: str) -> None:
        if kind in MULTI_KINDS:
            sub_key = getattr(obj, MULTI_KINDS[kind], None)
            if not sub_key:
                raise PluginError(f"plugin {plugin!r}: {kind} object for {key!r} has no {MULTI_KINDS[kind]}")
            owner_key = (kind, f"{key}/{sub_key}")
            slot = self._objects[kind].setdefault(key, {})
        else:
            sub_key, owner_key, slot = key, (kind, key), self._objects[kind]
        if owner_key in self._owners:
            raise PluginError(
                f"plugin {plugin!r}: {kind} {owner_key[1]!r} is already registered by plugin {self._owners[owner_key]!r}"
            )
        self._owners[owner_key] = plugin
        slot[sub_key] = obj

    def apply_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        """Apply ``[providers.<name>]`` tables: definition fields replace the pack's values,
        secret keys are kept apart; an unknown provider or key is refused with its name."""
        fields = {field.name for field in attrs.fields(Provider)}
        for name, table in overrides.items():
            provider = self.providers.get(name)
            if provider is None:
                raise PluginError(f"[providers.{name}]: no provider named {name!r} is installed")
            unknown = set(table) - fields - PROVIDER_SECRET_KEYS
            if unknown:
                raise PluginError(f"[providers.{name}]: unknown key(s) {', '.join(sorted(unknown))}")
            changes = {key: value for key, value in table.items() if key in fields}
            if changes:
                try:
                    for key, value in changes.items():
                        # a TOML table for a nested definition object (retry_headers)
                        current = getattr(provider, key)
                        if attrs.has(type(current)) and isinstance(value, Mapping):
                            changes[key] = type(current)(**value)
                    updated = attrs.evolve(provider, **changes)
                    updated.validate()
                except (TypeError, DefinitionError) as error:
                    raise PluginError(f"[providers.{name}]: {error}") from None
                self.providers[name] = updated
            self.secrets[name] = ProviderSecrets(**{k: v for k, v in table.items() if k in PROVIDER_SECRET_KEYS})


def _impls(pm: pluggy.PluginManager, hook_name: str) -> Iterable[tuple[str, Any]]:
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        yield impl.plugin_name, impl.function


def load_registry(pm: pluggy.PluginManager, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Registry:
    """Build the registry from every plugin known to ``pm``; raise :class:`PluginError` naming the
    plugin when one is broken."""
    registry = Registry()
    for plugin, function in _impls(pm, "register_providers"):
        try:
            definitions = list(function() or ())
        except PluginError:
            raise
        except Exception as error:  # a pack's own bug: say which pack
            raise PluginError(f"plugin {plugin!r}: register_providers failed: {error!r}") from error
        for provider in definitions:
            registry.add_provider(provider, plugin)
    for kind in (*SINGLE_KINDS, *MULTI_KINDS):
        for plugin, function in _impls(pm, f"register_{kind}"):

            def register(key: str, obj: Any, *, _kind: str = kind, _plugin: str = plugin) -> None:
                registry.add_object(_kind, key, obj, _plugin)

            try:
                function(register=register)
            except PluginError:
                raise
            except Exception as error:
                raise PluginError(f"plugin {plugin!r}: register_{kind} failed: {error!r}") from error
    registry.apply_overrides(overrides or {})
    return registry
