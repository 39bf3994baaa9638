"""The hook implementations the built-in packs share, made from each pack's own parts.

A pack module binds them to the hook names, which is how pluggy finds them::

    register_providers = definitions_hook(PROVIDERS)
    register_actions, register_triggers = action_hooks(PROVIDERS, actions)
    register_crm_mappers, register_record_sources = crm_hooks(NAME, MAPPER)
    register_flow_templates = templates_hook(templates)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from patchbay import hookimpl
from patchbay.providers import catalog
from patchbay.providers._shared.crm import record_source


def definitions_hook(providers: Iterable[str]) -> Callable[[], Any]:
    """``register_providers``: the catalog definitions of the pack's providers."""
    names = tuple(providers)

    @hookimpl
    def register_providers():
        return catalog.definitions(names)

    return register_providers


def action_hooks(providers: Iterable[str], module: ModuleType) -> tuple[Callable[..., None], Callable[..., None]]:
    """``register_actions`` and ``register_triggers``: ``module.actions()`` and
    ``module.triggers()`` for each of the pack's providers."""
    names = tuple(providers)

    @hookimpl
    def register_actions(register):
        for provider in names:
            for action in module.actions():
                register(provider, action)

    return register_actions, trigger_hook(names, module)


def trigger_hook(providers: Iterable[str], module: ModuleType) -> Callable[..., None]:
    """``register_triggers``: ``module.triggers()`` for each of the pack's providers (a pack whose
    actions are declared data and whose triggers are code)."""
    names = tuple(providers)

    @hookimpl
    def register_triggers(register):
        for provider in names:
            for trigger in module.triggers():
                register(provider, trigger)

    return register_triggers


def crm_hooks(name: str, mapper: Any) -> tuple[Callable[..., None], Callable[..., None]]:
    """``register_crm_mappers`` and ``register_record_sources``: the unified CRM mapper of provider
    ``name`` and a record source for each resource it maps."""

    @hookimpl
    def register_crm_mappers(register):
        register(name, mapper)

    @hookimpl
    def register_record_sources(register):
        for resource in mapper.resources:
            register(name, record_source(mapper, resource))

    return register_crm_mappers, register_record_sources


def templates_hook(module: ModuleType) -> Callable[..., None]:
    """``register_flow_templates``: the system flow templates of ``module.TEMPLATES``."""

    @hookimpl
    def register_flow_templates(register):
        for template in module.TEMPLATES:
            register(template["slug"], template)

    return register_flow_templates
