"""How long the provider catalog takes to load, against a baseline measured in the same run.

    python benchmarks/catalog_load.py [--rounds N]

Figures (median of N rounds): reading and structuring every definition with the catalog's strict
cattrs converter; the whole registry (plugin manager, every pack, validation); the registry with
the single ``catalog`` pack and every per-provider behaviour pack disabled (``[plugins] disable``),
which is the load before providers became one pack each; and the baseline, the same JSON parsed and
passed to ``Provider(**...)`` without any checking of keys or types.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from importlib.metadata import entry_points

from patchbay import Provider, RetryHeaders
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import load_registry
from patchbay.providers import catalog


def _timed(function, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def baseline() -> list[Provider]:
    providers = []
    for path in sorted(catalog.DATA.iterdir(), key=lambda p: p.name):
        if path.name.endswith(".json"):
            for raw in json.loads(path.read_text(encoding="utf-8")):
                retry = RetryHeaders(**raw.pop("retry_headers", {}))
                providers.append(Provider(**raw, retry_headers=retry))
    return providers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    count = len(catalog.load_definitions())
    base = _timed(baseline, rounds)
    strict = _timed(catalog.load_definitions, rounds)
    registry = _timed(lambda: load_registry(create_plugin_manager()), rounds)
    packs = sorted(ep.name for ep in entry_points(group="patchbay.providers") if ep.name != "catalog")
    single = _timed(lambda: load_registry(create_plugin_manager(disable=packs)), rounds)
    print(f"{count} definitions, median of {rounds} rounds")
    print(f"baseline (json + Provider(**), unchecked): {base * 1000:7.1f} ms")
    print(f"catalog load (strict cattrs):              {strict * 1000:7.1f} ms   {strict / base:4.2f}x baseline")
    print(f"registry, single catalog pack only:        {single * 1000:7.1f} ms   {single / base:4.2f}x baseline")
    print(f"registry, every pack ({len(packs) + 1} provider packs):   {registry * 1000:7.1f} ms   {registry / base:4.2f}x baseline, "
          f"{registry / single:4.2f}x single catalog ({(registry - single) * 1000:+.1f} ms)")
    print(f"settings: --rounds {rounds}" + (" (default 20)" if rounds != 20 else " (default)"))


if __name__ == "__main__":
    main()
