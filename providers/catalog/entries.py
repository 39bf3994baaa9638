"""One plugin per data-only provider of the catalog, served as module attributes.

The entry point ``github = patchbay.providers.catalog.entries:github`` (generated at build time by
``entry_points``, ``google-ads`` becoming the attribute ``google_ads``) resolves through the module
``__getattr__`` below to a plugin whose ``register_providers`` returns that one definition.
Attributes are made on first access, so loading the registry makes one small object per provider
and no module per provider. Every other name of this module starts with an underscore, which no
provider attribute does, so a provider can never resolve to one of them.
"""

import functools as _functools

from patchbay import Provider as _Provider
from patchbay import hookimpl as _hookimpl
from patchbay.providers import catalog as _catalog
from patchbay.providers.catalog.entry_points import attribute as _attribute


class _DataProvider:
    """The plugin of one data-only provider: its definition from its catalog file, nothing else.

    The hook implementation is a function kept on the instance and ``dir`` lists only it: pluggy
    then finds it without walking the class (a registry registers several hundred of these).
    ``data_only`` tells ``patchbay packs list`` to summarise these plugins in one row."""

    data_only = True

    def __init__(self, name: str) -> None:
        self.name = name

        @_hookimpl
        def register_providers() -> list[_Provider]:
            return [_catalog.definition(name)]

        self.register_providers = register_providers

    def __repr__(self) -> str:
        return f"<catalog provider {self.name!r}>"

    def __dir__(self) -> list[str]:
        return ["register_providers"]


@_functools.cache
def _names_by_attribute(folder) -> dict[str, str]:
    return {_attribute(name): name for name in _catalog.names(folder)}


def __getattr__(attr: str) -> _DataProvider:
    name = _names_by_attribute(_catalog.DEFINITIONS).get(attr)
    if name is None:
        raise AttributeError(f"the catalog has no definition file for the attribute {attr!r} (reinstall patchbay after adding one)")
    plugin = globals()[attr] = _DataProvider(name)
    return plugin
