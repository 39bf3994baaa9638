"""What is installed: each plugin's distribution, version, providers, hooks and load error, for
``patchbay packs list`` and ``patchbay packs check``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from patchbay.core.plugins.manager import IN_PROCESS, PluginManager
from patchbay.core.plugins.registry import Registry


def _version(distribution: str) -> str | None:
    if distribution == IN_PROCESS:
        return None
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def describe_plugins(pm: PluginManager, registry: Registry, *, disabled: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """One entry per installed plugin, by name: loaded ones with their providers and hooks,
    disabled and broken ones with why they are not loaded."""
    errors = {error.plugin: error.error for error in registry.load_errors}
    providers_of: dict[str, list[str]] = {}
    for provider, pack in sorted(registry.provider_pack.items()):
        providers_of.setdefault(pack, []).append(provider)
    described = []
    for name in sorted(set(pm.distributions) | {pm.get_name(plugin) for plugin in pm.get_plugins()}):
        plugin = pm.get_plugin(name)
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()) if plugin is not None else []
        distribution = pm.distribution(name)
        described.append(
            {
                "name": name,
                "distribution": distribution,
                "version": _version(distribution),
                "status": "disabled" if name in disabled else "error" if name in errors else "loaded",
                "providers": providers_of.get(name, []),
                "hooks": hooks,
                "error": errors.get(name),
            }
        )
    return described
