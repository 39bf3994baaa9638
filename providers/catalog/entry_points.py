"""The ``patchbay.providers`` entry points of the built-in providers, computed from the source tree.

``setup.py`` calls :func:`provider_entry_points` at build time (it loads this file by path, so only
the standard library may be imported here), and ``tests/catalog`` checks that the installed
metadata still matches it. The rules:

- every package under ``providers/`` except ``catalog`` and ``_shared`` is a provider pack with
  behaviour, installed under its folder name (``zoho_crm = patchbay.providers.zoho_crm``); its
  ``__init__.py`` names the catalog providers it defines in a literal ``PROVIDERS`` tuple;
- every other provider of the catalog (a file ``catalog/definitions/<name>.toml``) is data only and
  gets an entry point named like the provider into :mod:`patchbay.providers.catalog.entries`
  (``google-ads = patchbay.providers.catalog.entries:google_ads``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ENTRIES_MODULE = "patchbay.providers.catalog.entries"
NOT_PACKS = frozenset({"catalog", "_shared"})


class EntryPointError(ValueError):
    """The source tree cannot be turned into entry points; the message says which file and why."""


def attribute(name: str) -> str:
    """The attribute of :mod:`~patchbay.providers.catalog.entries` serving provider ``name``
    (an entry point's attribute is a dotted identifier path)."""
    return re.sub(r"\W", "_", name)


def definition_names(definitions: Path) -> list[str]:
    """The provider names of the catalog's definition files in ``definitions`` (each file is named
    after its provider; the catalog's tests check that its ``name`` says the same), in name order."""
    return sorted(path.name.removesuffix(".toml") for path in definitions.glob("*.toml") if path.is_file())


def declared_providers(package: Path) -> tuple[str, ...]:
    """The literal ``PROVIDERS`` tuple of a pack's ``__init__.py``."""
    init = package / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id == "PROVIDERS" for target in node.targets):
            try:
                return tuple(ast.literal_eval(node.value))
            except ValueError:
                break
    raise EntryPointError(f"{init}: a provider pack names its providers in a literal tuple PROVIDERS = (...)")


def behaviour_packs(providers: Path) -> dict[str, tuple[str, ...]]:
    """Each provider pack with behaviour under ``providers/`` and the providers it defines."""
    return {
        package.name: declared_providers(package)
        for package in sorted(providers.iterdir())
        if package.name not in NOT_PACKS and (package / "__init__.py").is_file()
    }


def provider_entry_points(providers: Path) -> list[str]:
    """The ``patchbay.providers`` group as ``name = value`` lines: the packs with behaviour, then
    one entry point per data-only provider. Raises :class:`EntryPointError` when two entry points
    or two attributes would share a name, or a pack claims a provider the catalog has no file for."""
    packs = behaviour_packs(providers)
    names = definition_names(providers / "catalog" / "definitions")
    claimed = {name: pack for pack, provided in packs.items() for name in provided}
    unknown = sorted(set(claimed) - set(names))
    if unknown:
        raise EntryPointError(f"providers {unknown} are claimed by packs {sorted({claimed[n] for n in unknown})} but have no file in catalog/definitions")
    lines = [f"{pack} = patchbay.providers.{pack}" for pack in packs]
    taken = dict.fromkeys(packs, "a provider pack")
    for name in names:
        if name in claimed:
            continue
        for key in (name, f":{attribute(name)}"):
            if key in taken:
                raise EntryPointError(f"catalog provider {name!r}: entry point {key!r} is already used by {taken[key]}")
            taken[key] = f"catalog provider {name!r}"
        lines.append(f"{name} = {ENTRIES_MODULE}:{attribute(name)}")
    return lines
