"""Every data-only built-in provider passes the data part of the pack acceptance suite: definition
valid and from the plugin named like it, derived capabilities, credential injection into a fake of
its API, and its health check true, then false on 401. One app serves them all, each aimed at the
same fake."""

import pytest

from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import MULTI_KINDS, SINGLE_KINDS, load_registry
from patchbay.testing.acceptance import check_capabilities, check_definition, check_health, check_injection


def data_only_providers() -> list[str]:
    registry = load_registry(create_plugin_manager())
    with_behaviour = {key for kind in (*SINGLE_KINDS, *MULTI_KINDS) for key in registry.objects(kind)}
    return sorted(set(registry.providers) - with_behaviour)


@pytest.mark.timeout(900)
@pytest.mark.slow  # about 3 s (setup and call)
async def test_every_data_only_provider_passes_the_data_part(pack_harness):
    names = data_only_providers()
    assert len(names) > 800
    first = await pack_harness(names[0], aim=names)
    failures, health_checked = {}, 0
    for name in names:
        harness = first if name == names[0] else await first.for_provider(name)
        try:
            check_definition(harness, name)
            check_capabilities(harness)
            await check_injection(harness)
            health_checked += await check_health(harness)
        except AssertionError as error:
            failures[name] = str(error) or repr(error)
    assert failures == {}
    assert health_checked > 0
