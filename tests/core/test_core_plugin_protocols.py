"""The objects plugins register are checked against their kind's protocol when the registry loads:
a missing method stops the start naming the plugin, instead of failing at the first call."""

import pytest

import patchbay
from patchbay import hookimpl
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.protocols import PROTOCOLS, contract_problem
from patchbay.core.plugins.registry import PluginError, load_registry


def _load(plugin: object, name: str):
    pm = create_plugin_manager(entry_point_groups=())
    pm.register(plugin, name=name)
    return load_registry(pm)


class SilentChannel:
    """An alert channel that forgot ``send``."""

    async def deliver(self, alert, target, context):
        return None


class WorkingChannel:
    async def send(self, alert, target, context):
        return None


def test_an_alert_channel_without_send_stops_the_start_naming_the_plugin():
    class Pack:
        @hookimpl
        def register_alert_channels(self, register):
            register("pager", SilentChannel())

    with pytest.raises(PluginError) as raised:
        _load(Pack(), "pager-pack")
    message = str(raised.value)
    assert "pager-pack" in message and "'pager'" in message and "send()" in message and "patchbay.AlertChannel" in message


def test_a_conforming_object_loads_without_a_base_class():
    class Pack:
        @hookimpl
        def register_alert_channels(self, register):
            register("pager", WorkingChannel())

    assert isinstance(_load(Pack(), "pager-pack").get("alert_channels", "pager"), WorkingChannel)


@pytest.mark.parametrize(
    ("kind", "obj", "named"),
    [
        ("step_types", object(), "run()"),
        ("crm_mappers", type("OnlyList", (), {"list": lambda self, *a: None})(), "get()"),
        ("crm_destinations", type("OnlyPush", (), {"push": lambda self, *a: None})(), "test()"),
        ("federated_login", object(), "authorization_url(), complete()"),
        ("deletion_callbacks", type("NoField", (), {"subject": lambda self, *a: None})(), "field"),
        ("deauthorization_callbacks", object(), "user()"),
        ("proxy", object(), "neither prepare(call) nor retry_after(response)"),
        ("actions", {"name": "echo"}, "expected Action"),
        ("webhooks", object(), "expected WebhookHandler"),
    ],
)
def test_each_kind_names_what_its_object_lacks(kind, obj, named):
    assert named in (contract_problem(kind, obj) or "")


def test_the_protocols_are_part_of_the_public_facade():
    for protocol in PROTOCOLS.values():
        assert getattr(patchbay, protocol.__name__) is protocol
        assert protocol.__name__ in patchbay.__all__
