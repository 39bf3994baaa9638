"""The built-in provider catalog: several hundred real providers as declarative definitions.

The definitions live in ``data/<category>.json`` (one list per primary category), written by
``generate.py`` from the provider facts and reviewed like code; see docs/providers.md. This module
only reads them: each object is structured into a :class:`patchbay.Provider` with cattrs, and a key
that is not a field of ``Provider`` (a typo, a stale field) stops the load with the file and the
provider's name. Nothing is cached between calls, so every plugin manager gets its own objects.
"""

from __future__ import annotations

import json
from importlib.resources import files
from importlib.resources.abc import Traversable

import cattrs

from patchbay import Provider, hookimpl

DATA = files(__name__) / "data"


class CatalogError(ValueError):
    """A definition in the catalog's data files cannot be read; the message names the file and the
    provider."""


def _strict(kind: type):
    """cattrs' default hooks coerce (``bool({"a": 1})``, ``tuple("read")``); JSON data must already
    have the right type."""

    def structure(value, _type):
        if not isinstance(value, kind):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value

    return structure


def _strings(value, _type) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"expected a list of strings, got {value!r}")
    return tuple(value)


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(bool, _strict(bool))
    converter.register_structure_hook(str, _strict(str))
    converter.register_structure_hook_func(lambda kind: kind == tuple[str, ...], _strings)
    return converter


def load_definitions(folder: Traversable | None = None) -> list[Provider]:
    """Every definition of the data files in ``folder`` (the catalog's ``data``), in file order."""
    folder = DATA if folder is None else folder
    converter = _converter()
    providers: list[Provider] = []
    for path in sorted((p for p in folder.iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        try:
            definitions = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise CatalogError(f"catalog {path.name}: not valid JSON: {error}") from None
        if not isinstance(definitions, list):
            raise CatalogError(f"catalog {path.name}: expected a list of provider definitions")
        for index, raw in enumerate(definitions):
            name = raw.get("name") if isinstance(raw, dict) else None
            try:
                providers.append(converter.structure(raw, Provider))
            except Exception as error:  # cattrs wraps every problem; name each one
                problems = "; ".join(cattrs.transform_error(error, path="definition"))
                raise CatalogError(f"catalog {path.name}: provider {name or f'#{index}'!r}: {problems}") from None
    return providers


@hookimpl
def register_providers():
    return load_definitions()
