"""Builds the plugin manager: hook specs plus every plugin from the two entry-point groups.

Rules (docs/provider-packs.md): an entry-point name is one plugin across both groups, so a second
distribution using a taken name is an error naming both distributions; ``[plugins] disable`` skips
plugins by name; a hook implementation whose name is no hook (``register_action``) is refused; a
plugin that fails to import is reported by name, or with ``[plugins] skip_broken`` left out and
listed in ``load_errors`` (shown by ``/health`` and ``patchbay providers list``).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import Distribution, EntryPoint, entry_points

import attrs
import pluggy

from patchbay.core.plugins import hookspecs
from patchbay.core.plugins.registry import PluginError, PluginSettingsError, Registry, load_registry
from patchbay.core.settings import Settings

ENTRY_POINT_GROUPS = ("patchbay.providers", "patchbay.plugins")
#: the distribution named for plugins registered in-process (tests, embedding)
IN_PROCESS = "<in-process>"


@attrs.frozen
class LoadError:
    """A plugin left out because it is broken (``[plugins] skip_broken``)."""

    plugin: str
    distribution: str
    error: str

    def as_json(self) -> dict[str, str]:
        return {"plugin": self.plugin, "distribution": self.distribution, "error": self.error}


class PluginManager(pluggy.PluginManager):
    """pluggy's manager plus what patchbay knows about each plugin: its distribution and the
    plugins left out as broken."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.distributions: dict[str, str] = {}
        self.load_errors: list[LoadError] = []

    def distribution(self, plugin_name: str) -> str:
        return self.distributions.get(plugin_name, IN_PROCESS)

    def leave_out(self, plugin_name: str, error: Exception) -> None:
        """Unregister a broken plugin and remember why."""
        if self.get_plugin(plugin_name) is not None:
            self.unregister(name=plugin_name)
        self.load_errors.append(LoadError(plugin_name, self.distribution(plugin_name), str(error)))


def create_plugin_manager(
    extra_plugins: Iterable[object] = (),
    *,
    entry_point_groups: Iterable[str] = ENTRY_POINT_GROUPS,
    disable: Iterable[str] = (),
    skip_broken: bool = False,
) -> PluginManager:
    """A fresh plugin manager. Built-in packs are found through the same entry points as
    third-party ones; ``extra_plugins`` are registered too (tests, embedding)."""
    pm = PluginManager()
    disabled = set(disable)
    seen: set[str] = set()
    distributions: dict[Distribution, str] = {}
    installed = entry_points()  # one scan of the installed distributions for every group
    for group in entry_point_groups:
        for entry_point in installed.select(group=group):
            distribution = _distribution_name(entry_point, distributions)
            if entry_point.name in pm.distributions:
                raise PluginError(
                    f"plugin {entry_point.name!r}: entry point name of distribution {distribution!r} ({group}) "
                    f"is already taken by distribution {pm.distributions[entry_point.name]!r}; rename one entry point"
                )
            pm.distributions[entry_point.name] = distribution
            seen.add(entry_point.name)
            if entry_point.name in disabled:
                continue
            try:
                plugin = entry_point.load()
            except Exception as error:
                failure = PluginError(f"plugin {entry_point.name!r} ({distribution}, {entry_point.value}) failed to load: {error!r}")
                if not skip_broken:
                    raise failure from error
                pm.load_errors.append(LoadError(entry_point.name, distribution, str(failure)))
                continue
            _register(pm, plugin, entry_point.name)
    unknown = disabled - seen
    if unknown:
        raise PluginSettingsError(f"[plugins] disable: no installed plugin named {', '.join(sorted(map(repr, unknown)))}")
    for plugin in extra_plugins:
        _register(pm, plugin, None)
    _check_hook_names(pm, skip_broken=skip_broken)
    return pm


def _distribution_name(entry_point: EntryPoint, known: dict[Distribution, str]) -> str:
    """The distribution of an entry point; ``known`` keeps each distribution's name, whose metadata
    file is parsed on every ``dist.name`` (patchbay alone has an entry point per provider)."""
    if entry_point.dist is None:
        return IN_PROCESS
    if entry_point.dist not in known:
        known[entry_point.dist] = entry_point.dist.name
    return known[entry_point.dist]


def _register(pm: PluginManager, plugin: object, name: str | None) -> None:
    try:
        pm.register(plugin, name=name)
    except (ValueError, pluggy.PluginValidationError) as error:
        raise PluginError(f"plugin {name or plugin!r} is invalid: {error}") from error


def _check_hook_names(pm: PluginManager, *, skip_broken: bool) -> None:
    """Refuse hook implementations that match no hook (a typo would be silently ignored)."""
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as error:
            name = pm.get_name(error.plugin)
            failure = PluginError(f"plugin {name!r} ({pm.distribution(name)}): {error}")
            if not skip_broken:
                raise failure from None
            pm.leave_out(name, failure)


def build_registry(settings: Settings, extra_plugins: Iterable[object] = ()) -> tuple[PluginManager, Registry]:
    """The plugin manager and registry a process runs with, under its ``[plugins]`` and
    ``[providers.<name>]`` settings and with the plugins' own sections loaded."""
    options = settings.plugins
    pm = create_plugin_manager(extra_plugins, disable=options.disable, skip_broken=options.skip_broken)
    registry = load_registry(
        pm, settings.providers, replace=options.replace, skip_broken=options.skip_broken, sections=settings.plugin_sections, environ=settings.plugin_environ
    )
    return pm, registry
