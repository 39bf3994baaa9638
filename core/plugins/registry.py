"""The registry: every provider definition and every registered plugin object, loaded once.

The application, the flow engine, the identity provider and the CLI all read the same registry; it
lives on the app (``appkeys.REGISTRY``), never in a module global.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from patchbay.core.plugins.protocols import contract_problem
from patchbay.core.plugins.provider import DefinitionError, Provider
from patchbay.core.settings import Settings, SettingsError, load_section

if TYPE_CHECKING:
    from patchbay.core.plugins.manager import LoadError, PluginManager

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
    "flow_templates",
    "deauthorization_callbacks",
    "deletion_identities",
    "deletion_callbacks",
    "settings",
)
#: Hooks whose objects are keyed by provider name and then by the object's own name.
MULTI_KINDS = {"actions": "name", "triggers": "name", "record_sources": "resource_type"}
#: Hooks keyed by a provider name: the provider must be installed (see ``load_registry``).
PROVIDER_KINDS = frozenset({"auth", "proxy", "webhooks", "crm_mappers", "crm_destinations", "deauthorization_callbacks", *MULTI_KINDS})
#: Capabilities that say what is registered for a provider, derived rather than declared.
DERIVED_CAPABILITIES = {"actions": "actions", "triggers": "triggers", "crm_mappers": "unified_crm", "record_sources": "records"}

#: Top-level settings of the core, which no plugin section may take.
CORE_SETTINGS = frozenset(Settings.model_fields)

#: Keys of ``[providers.<name>]`` that are deployment secrets, not definition fields.
PROVIDER_SECRET_KEYS = frozenset({"client_id", "client_secret", "webhook_verify_token", "webhook_secret"})


class PluginError(RuntimeError):
    """A plugin is broken; the message names the plugin (pack) and what is wrong; ``plugin`` is
    its name when one plugin is to blame."""

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin


class PluginSettingsError(PluginError):
    """The operator's plugin settings are wrong (``[providers.<name>]``, ``[plugins]``), not a plugin;
    the message starts with the table it names."""


@attrs.frozen
class ProviderSecrets:
    """The deployment's own credentials for a provider, from ``[providers.<name>]``."""

    client_id: str | None = None
    client_secret: str | None = None
    webhook_verify_token: str | None = None
    webhook_secret: str | None = None


class Registry:
    """Provider definitions and plugin objects by kind; see ``hookspecs`` for the kinds."""

    def __init__(self, distributions: Mapping[str, str] | None = None) -> None:
        self.distributions = dict(distributions or {})
        #: plugins left out as broken (``[plugins] skip_broken``), for ``/health`` and the CLI
        self.load_errors: list[LoadError] = []
        self.providers: dict[str, Provider] = {}
        self.provider_pack: dict[str, str] = {}
        self.secrets: dict[str, ProviderSecrets] = {}
        self.sections: dict[str, Any] = {}
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

    def plugin_settings(self, section: str) -> Any:
        """The loaded ``[section]`` a plugin declared (``register_settings``), or None."""
        return self.sections.get(section)

    def describe(self, plugin: str) -> str:
        """A plugin named with its distribution, for error messages."""
        return f"{plugin!r} (distribution {self.distributions.get(plugin, '<in-process>')!r})"

    # -- loading --------------------------------------------------------------------------------

    def add_provider(self, provider: Provider, pack: str) -> None:
        if not isinstance(provider, Provider):
            raise PluginError(f"plugin {pack!r}: register_providers returned {provider!r}, not a Provider", plugin=pack)
        try:
            provider.validate()
        except DefinitionError as error:
            raise PluginError(f"plugin {pack!r}: {error}", plugin=pack) from None
        if provider.name in self.providers:
            other = self.provider_pack[provider.name]
            raise PluginError(
                f"plugin {self.describe(pack)}: provider {provider.name!r} is already defined by plugin {self.describe(other)}; "
                f"to replace it, list {pack!r} in [plugins] replace",
                plugin=pack,
            )
        self.providers[provider.name] = provider
        self.provider_pack[provider.name] = pack

    def add_object(self, kind: str, key: str, obj: Any, plugin: str) -> None:
        problem = contract_problem(kind, obj)
        if problem is not None:
            raise PluginError(f"plugin {self.describe(plugin)}: the {kind} object for {key!r} {problem}", plugin=plugin)
        if kind in MULTI_KINDS:
            sub_key = getattr(obj, MULTI_KINDS[kind], None)
            if not sub_key:
                raise PluginError(f"plugin {plugin!r}: {kind} object for {key!r} has no {MULTI_KINDS[kind]}", plugin=plugin)
            owner_key = (kind, f"{key}/{sub_key}")
            slot = self._objects[kind].setdefault(key, {})
        else:
            sub_key, owner_key, slot = key, (kind, key), self._objects[kind]
        if owner_key in self._owners:
            raise PluginError(
                f"plugin {self.describe(plugin)}: {kind} {owner_key[1]!r} is already registered by plugin {self.describe(self._owners[owner_key])}",
                plugin=plugin,
            )
        self._owners[owner_key] = plugin
        slot[sub_key] = obj

    def apply_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        """Apply ``[providers.<name>]`` tables: definition fields replace the pack's values,
        secret keys are kept apart; an unknown provider or key is refused with its name. Two
        fields are the operator's word on the OAuth app rather than replacements: ``oauth_hosts``
        adds to the definition's host patterns, and the parameters ``connection_param_defaults``
        sets become ``fixed_params`` (a caller cannot override them)."""
        fields = {field.name for field in attrs.fields(Provider)}
        for name, table in overrides.items():
            provider = self.providers.get(name)
            if provider is None:
                raise PluginSettingsError(f"[providers.{name}]: no provider named {name!r} is installed")
            unknown = set(table) - fields - PROVIDER_SECRET_KEYS
            if unknown:
                raise PluginSettingsError(f"[providers.{name}]: unknown key(s) {', '.join(sorted(unknown))}")
            changes = {key: value for key, value in table.items() if key in fields}
            if isinstance(changes.get("oauth_hosts"), list | tuple):
                changes["oauth_hosts"] = (*provider.oauth_hosts, *changes["oauth_hosts"])
            if isinstance(changes.get("connection_param_defaults"), Mapping):
                changes["fixed_params"] = (*changes.get("fixed_params", provider.fixed_params), *changes["connection_param_defaults"])
            if changes:
                try:
                    for key, value in changes.items():
                        # a TOML table for a nested definition object (retry_headers)
                        current = getattr(provider, key)
                        if attrs.has(type(current)) and isinstance(value, Mapping):
                            changes[key] = type(current)(**value)
                    updated = attrs.evolve(provider, **changes)
                    if "connection_params" not in changes:
                        # a parameter asked for only by a template the operator replaced is no longer required
                        dropped = set(provider.templated_params()) - updated.templated_params()
                        updated = attrs.evolve(
                            updated,
                            connection_params=tuple(p for p in updated.connection_params if p not in dropped),
                            fixed_params=tuple(p for p in updated.fixed_params if p not in dropped),
                            optional_fields=tuple(p for p in updated.optional_fields if p not in dropped),
                            field_labels={k: v for k, v in updated.field_labels.items() if k not in dropped},
                            field_help={k: v for k, v in updated.field_help.items() if k not in dropped},
                        )
                    updated.validate()
                except (TypeError, DefinitionError) as error:
                    raise PluginSettingsError(f"[providers.{name}]: {error}") from None
                self.providers[name] = updated
            self.secrets[name] = ProviderSecrets(**{k: v for k, v in table.items() if k in PROVIDER_SECRET_KEYS})

    def apply_plugin_settings(self, tables: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        """Load each declared plugin section from its table and ``PATCHBAY_<SECTION>_<FIELD>``
        variables; a table no plugin declares is refused."""
        unknown = sorted(set(tables) - set(self._objects["settings"]))
        if unknown:
            raise PluginSettingsError(f"[{unknown[0]}]: no loaded plugin declares this settings section (a disabled plugin's section is refused too)")
        for section, cls in self._objects["settings"].items():
            try:
                self.sections[section] = load_section(section, cls, tables.get(section, {}), environ)
            except SettingsError as error:
                raise PluginSettingsError(str(error)) from None

    def derive_capabilities(self) -> None:
        """Make each provider's capabilities say what is registered for it: ``actions``,
        ``triggers``, ``unified_crm`` and ``records`` follow the registered objects, and a webhook
        handler makes the provider receive webhooks whatever its definition declared."""
        for name, provider in self.providers.items():
            capabilities = [c for c in provider.capabilities if c not in DERIVED_CAPABILITIES.values()]
            capabilities += [capability for kind, capability in DERIVED_CAPABILITIES.items() if self._objects[kind].get(name)]
            webhooks = provider.webhooks or name in self._objects["webhooks"]
            if webhooks and "webhook_receive" not in capabilities:
                capabilities.append("webhook_receive")
            if tuple(capabilities) != provider.capabilities or webhooks != provider.webhooks:
                self.providers[name] = attrs.evolve(provider, capabilities=capabilities, webhooks=webhooks)


def _impls(pm: pluggy.PluginManager, hook_name: str) -> Iterable[tuple[str, Any]]:
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        yield impl.plugin_name, impl.function


def load_registry(
    pm: PluginManager,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    replace: Iterable[str] = (),
    skip_broken: bool = False,
    sections: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Registry:
    """Build the registry from every plugin known to ``pm``; raise :class:`PluginError` naming the
    plugin when one is broken, or with ``skip_broken`` unregister it, note it in
    ``load_errors`` and build again without it.

    ``sections`` and ``environ`` are the settings' ``plugin_sections`` and ``plugin_environ``, from
    which each plugin's declared section is loaded (``register_settings``).

    ``replace`` names plugins whose providers take the place of same-named ones from other
    plugins: the other plugins' definitions and every object they register for those providers
    are ignored. Objects keyed by a provider name must name an installed provider; a plugin whose
    ``extends`` attribute lists the provider registers them only when it is installed.
    """
    while True:
        try:
            registry = _load(pm, tuple(replace))
        except PluginError as error:
            if not skip_broken or error.plugin is None or pm.get_plugin(error.plugin) is None:
                raise
            pm.leave_out(error.plugin, error)
            continue
        registry.apply_overrides(overrides or {})
        registry.apply_plugin_settings(sections or {}, environ or {})
        registry.load_errors = list(pm.load_errors)
        return registry


def _load(pm: PluginManager, replace: tuple[str, ...]) -> Registry:
    registry = Registry(pm.distributions)
    unknown = [name for name in replace if pm.get_plugin(name) is None]
    if unknown:
        raise PluginSettingsError(f"[plugins] replace: no installed plugin named {', '.join(map(repr, unknown))}")
    definitions_by_plugin: dict[str, list[Provider]] = {}
    for plugin, function in _impls(pm, "register_providers"):
        try:
            definitions_by_plugin[plugin] = list(function() or ())
        except PluginError:
            raise
        except Exception as error:  # a pack's own bug: say which pack
            raise PluginError(f"plugin {plugin!r}: register_providers failed: {error!r}", plugin=plugin) from error
    replaced = {getattr(provider, "name", None): plugin for plugin in replace for provider in definitions_by_plugin.get(plugin, ())}
    for plugin, definitions in definitions_by_plugin.items():
        for provider in definitions:
            if replaced.get(getattr(provider, "name", None), plugin) == plugin:
                registry.add_provider(provider, plugin)
    for kind in (*SINGLE_KINDS, *MULTI_KINDS):
        for plugin, function in _impls(pm, f"register_{kind}"):
            extends = frozenset(getattr(pm.get_plugin(plugin), "extends", ()))

            def register(key: str, obj: Any, *, _kind: str = kind, _plugin: str = plugin, _extends: frozenset = extends) -> None:
                if _kind in PROVIDER_KINDS:
                    if replaced.get(key, _plugin) != _plugin:
                        return
                    if key not in registry.providers:
                        if key in _extends:
                            return
                        raise PluginError(
                            f"plugin {_plugin!r}: register_{_kind} names provider {key!r}, which no installed plugin defines "
                            f"(list it in the plugin's `extends` to register only when it is installed)",
                            plugin=_plugin,
                        )
                if _kind == "settings" and key in CORE_SETTINGS:
                    raise PluginError(f"plugin {_plugin!r}: register_settings names [{key}], which is a core setting", plugin=_plugin)
                registry.add_object(_kind, key, obj, _plugin)

            try:
                function(register=register)
            except PluginError:
                raise
            except Exception as error:
                raise PluginError(f"plugin {plugin!r}: register_{kind} failed: {error!r}", plugin=plugin) from error
    registry.derive_capabilities()
    return registry
