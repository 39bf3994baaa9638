"""How long the provider registry takes to load, one plugin per provider against the single catalog
plugin it replaced, measured in the same run.

    python benchmarks/catalog_load.py [--rounds N]

Figures (median of N rounds; a round runs every measurement once, in rotated order, each cold: the
catalog's parsed files and converter are dropped first, so it loads the catalog as a fresh process
does, from the index of parsed files in the user's cache directory unless said otherwise):

- baseline: every definition file parsed with ``tomllib`` and passed to ``Provider(**...)``
  without checking keys or types;
- catalog load, files parsed: every file parsed (no index) and structured with the catalog's strict
  cattrs converter, what a process does when the files changed or no cache directory is writable;
- catalog load: the same from the index of parsed files, what a process does otherwise;
- registry, single catalog plugin: the shape before providers became plugins each: every data-only
  entry point disabled (``[plugins] disable``) and one in-process plugin returning all their
  definitions, beside the provider packs with behaviour and the other plugins;
- registry, one plugin per provider: what a process loads today (every installed entry point);
- app build, both ways: ``create_app`` of a test (no migration, no background work), which is the
  server's start without binding a port.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
import tomllib
from importlib.metadata import entry_points

from patchbay import Provider, RetryHeaders, hookimpl
from patchbay.core.app import create_app
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import load_registry
from patchbay.core.settings import load_settings
from patchbay.providers import catalog
from patchbay.providers.catalog.entry_points import ENTRIES_MODULE


def _timed(functions: dict[str, object], rounds: int) -> dict[str, float]:
    """Median seconds of each function; every round runs them all, in an order rotated per round
    (the load of a shared machine drifts alike for all)."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    names = list(functions)
    for round_number in range(rounds):
        for name in names[round_number % len(names) :] + names[: round_number % len(names)]:
            catalog._index.cache_clear()
            catalog._names.cache_clear()
            catalog._converter.cache_clear()
            gc.collect()
            gc.disable()  # as timeit does: a collection falls on whichever measurement runs then
            start = time.perf_counter()
            functions[name]()
            samples[name].append(time.perf_counter() - start)
            gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def baseline() -> list[Provider]:
    providers = []
    for path in sorted(catalog.DEFINITIONS.iterdir(), key=lambda p: p.name):
        if path.name.endswith(catalog.SUFFIX):
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
            retry = RetryHeaders(**raw.pop("retry_headers", {}))
            providers.append(Provider(**raw, retry_headers=retry))
    return providers


def parsed() -> list[Provider]:
    """The catalog loaded without its index: every file parsed."""
    installed, catalog.INSTALLED = catalog.INSTALLED, None
    try:
        return catalog.load_definitions()
    finally:
        catalog.INSTALLED = installed


class SingleCatalog:
    """The former ``catalog`` plugin: every data-only definition from one hook implementation."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    @hookimpl
    def register_providers(self) -> list[Provider]:
        wanted = set(self.names)
        return [provider for provider in catalog.load_definitions() if provider.name in wanted]


def _settings(data_dir: str, **plugin_settings):
    settings = load_settings({}, {"PATCHBAY_SECRET_KEY": "benchmark-secret-key", "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SCHEDULER": "false"})
    for key, value in plugin_settings.items():
        setattr(settings.plugins, key, value)
    return settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    data_only = sorted(ep.name for ep in entry_points(group="patchbay.providers") if ep.value.startswith(f"{ENTRIES_MODULE}:"))
    single = SingleCatalog(data_only)
    count = len(catalog.load_definitions())  # writes the index when it is missing or stale
    with tempfile.TemporaryDirectory() as data_dir:
        single_settings, settings = _settings(data_dir, disable=data_only), _settings(data_dir)
        figures = _timed(
            {
                "baseline": baseline,
                "parsed": parsed,
                "strict": catalog.load_definitions,
                "single": lambda: load_registry(create_plugin_manager([single], disable=data_only)),
                "per_provider": lambda: load_registry(create_plugin_manager()),
                "single_app": lambda: create_app(single_settings, plugins=[single], background=False, migrate=False),
                "app": lambda: create_app(settings, background=False, migrate=False),
            },
            rounds,
        )
    base, files_parsed, strict, single_load, per_provider, single_app, app = figures.values()
    print(f"{count} definitions, {len(data_only)} of them data-only, median of {rounds} cold rounds")
    print(f"baseline (tomllib + Provider(**), unchecked): {base * 1000:6.1f} ms")
    print(f"catalog load, files parsed (strict cattrs):  {files_parsed * 1000:7.1f} ms   {files_parsed / base:4.2f}x baseline")
    print(f"catalog load, from the index (strict):       {strict * 1000:7.1f} ms   {strict / base:4.2f}x baseline")
    print(f"registry, single catalog plugin:             {single_load * 1000:7.1f} ms   {single_load / base:4.2f}x baseline")
    print(
        f"registry, one plugin per provider:           {per_provider * 1000:7.1f} ms   {per_provider / base:4.2f}x baseline, "
        f"{per_provider / single_load:4.2f}x single catalog ({(per_provider - single_load) * 1000:+.1f} ms)"
    )
    print(f"app build, single catalog plugin:            {single_app * 1000:7.1f} ms")
    print(f"app build, one plugin per provider:          {app * 1000:7.1f} ms   {(app - single_app) * 1000:+.1f} ms vs single catalog")
    print(f"settings: --rounds {rounds}" + (" (default 20)" if rounds != 20 else " (default)"))


if __name__ == "__main__":
    main()
