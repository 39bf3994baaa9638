"""Every poll trigger of a built-in pack keeps its cursor with the one shared helper
(``providers/_shared/polling.py``), so the first poll never replays history and the cursor never
moves back, alike for all."""

from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import load_registry
from patchbay.providers._shared.polling import high_water_mark


def test_every_builtin_poll_trigger_uses_the_shared_cursor_helper():
    registry = load_registry(create_plugin_manager(entry_point_groups=("patchbay.providers",)))
    helper = high_water_mark(None, start=None, mark=None).__qualname__
    polls = {
        f"{provider}.{trigger.name}": trigger.poll.__qualname__
        for provider, triggers in registry.objects("triggers").items()
        for trigger in triggers.values()
        if trigger.kind == "poll"
    }
    assert "hubspot.new_contact" in polls and len(polls) >= 10
    assert {name: qualname for name, qualname in polls.items() if qualname != helper} == {}
