"""Builds the plugin manager: hook specs plus every plugin from the two entry-point groups."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points

import pluggy

from patchbay.core.plugins import hookspecs
from patchbay.core.plugins.registry import PluginError

ENTRY_POINT_GROUPS = ("patchbay.providers", "patchbay.plugins")


def create_plugin_manager(extra_plugins: Iterable[object] = (), *, entry_point_groups=ENTRY_POINT_GROUPS) -> pluggy.PluginManager:
    """A fresh plugin manager. Built-in packs are found through the same entry points as
    third-party ones; ``extra_plugins`` are registered too (tests, embedding)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for group in entry_point_groups:
        for entry_point in entry_points(group=group):
            if pm.get_plugin(entry_point.name) is not None:
                continue
            try:
                plugin = entry_point.load()
            except Exception as error:
                raise PluginError(f"plugin {entry_point.name!r} ({entry_point.value}) failed to load: {error!r}") from error
            _register(pm, plugin, entry_point.name)
    for plugin in extra_plugins:
        _register(pm, plugin, None)
    return pm


def _register(pm: pluggy.PluginManager, plugin: object, name: str | None) -> None:
    try:
        pm.register(plugin, name=name)
    except (ValueError, pluggy.PluginValidationError) as error:
        raise PluginError(f"plugin {name or plugin!r} is invalid: {error}") from error
