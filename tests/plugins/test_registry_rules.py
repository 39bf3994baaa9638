"""Registry rules: taken entry-point names, hook-name typos, registrations for unknown providers,
derived capabilities, ``[plugins] disable`` / ``replace`` / ``skip_broken``. Installed packs come
from the ``install`` fixture (tests/plugins/conftest.py)."""

import pytest
from click.testing import CliRunner

from patchbay import Action, Provider, Trigger, WebhookHandler, hookimpl
from patchbay.cli.main import cli
from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import PluginError, load_registry


def definition(name="acme", **changes):
    fields = {"name": name, "display_name": name.title(), "category": "crm", "auth_mode": "api_key", "api_base_url": f"https://api.{name}.test"}
    return Provider(**{**fields, **changes})


async def echo(client, inputs):
    return inputs


ACME_MODULE = """
    from patchbay import Provider, hookimpl

    @hookimpl
    def register_providers():
        return [Provider(name="acme", display_name="Acme", category="crm", auth_mode="api_key", api_base_url="https://api.acme.test")]
"""


@pytest.mark.parametrize(("name", "group"), [("github", "patchbay.providers"), ("hubspot", "patchbay.providers"), ("slack", "patchbay.plugins")])
def test_taken_entry_point_name_is_an_error_naming_both_distributions(install, name, group):
    install("acme-pack", {group: {name: "acme_pack_module"}}, {"acme_pack_module": ACME_MODULE})
    with pytest.raises(PluginError) as raised:
        create_plugin_manager()
    message = str(raised.value)
    assert f"'{name}'" in message and "'acme-pack'" in message and "'patchbay-server'" in message


def test_pack_named_like_the_stripe_provider_never_replaces_billing(install):
    """A pack whose entry point is the provider name ``stripe`` once replaced the billing plugin; the
    name now belongs to the built-in Stripe provider pack, so it is refused, and billing (entry point
    ``stripe_billing``) stays beside the provider pack."""
    assert "stripe" in load_registry(create_plugin_manager()).objects("payment_providers")
    install("acme-stripe", {"patchbay.providers": {"stripe": "acme_stripe_module"}}, {"acme_stripe_module": ACME_MODULE})
    with pytest.raises(PluginError, match="'acme-stripe'"):
        create_plugin_manager()


def test_hook_name_typo_is_refused():
    class Typo:
        @hookimpl
        def register_action(self, register):
            register("acme", Action(name="echo", display_name="Echo", run=echo))

    with pytest.raises(PluginError, match="register_action"):
        create_plugin_manager([Typo()], entry_point_groups=())


def test_registration_for_an_unknown_provider_is_refused_unless_the_pack_extends_it():
    class Stray:
        @hookimpl
        def register_actions(self, register):
            register("ghost", Action(name="echo", display_name="Echo", run=echo))

    with pytest.raises(PluginError, match="register_actions names provider 'ghost'"):
        load_registry(create_plugin_manager([Stray()], entry_point_groups=()))

    class Extension(Stray):
        extends = ("ghost",)

    registry = load_registry(create_plugin_manager([Extension()], entry_point_groups=()))
    assert registry.get("actions", "ghost") is None


def test_capabilities_follow_what_is_registered():
    class Pack:
        @hookimpl
        def register_providers(self):
            # claims actions and unified CRM, offers neither; says no webhooks but handles them
            return [definition(capabilities=("proxy", "actions", "unified_crm"))]

        @hookimpl
        def register_triggers(self, register):
            async def poll(client, config, cursor):
                return [], cursor

            register("acme", Trigger(name="new_thing", display_name="New thing", kind="poll", poll=poll))

        @hookimpl
        def register_webhooks(self, register):
            register("acme", WebhookHandler())

    provider = load_registry(create_plugin_manager([Pack()], entry_point_groups=())).provider("acme")
    assert set(provider.capabilities) == {"proxy", "triggers", "webhook_receive"}
    assert provider.webhooks is True


def test_builtin_capabilities_are_derived():
    registry = load_registry(create_plugin_manager())
    stripe = registry.provider("stripe")
    assert stripe.webhooks and "webhook_receive" in stripe.capabilities
    hubspot = registry.provider("hubspot")
    assert {"actions", "triggers", "unified_crm"} <= set(hubspot.capabilities)


def test_disable_skips_a_plugin_and_refuses_an_unknown_name():
    registry = load_registry(create_plugin_manager(disable=["stripe_billing"]))
    assert registry.objects("payment_providers") == {}
    assert "stripe" in load_registry(create_plugin_manager()).objects("payment_providers")
    with pytest.raises(PluginError, match="disable: no installed plugin named 'strpie'"):
        create_plugin_manager(disable=["strpie"])


def test_replace_takes_a_provider_with_its_behaviour_from_the_named_plugin():
    class MyHubspot:
        @hookimpl
        def register_providers(self):
            return [definition("hubspot", display_name="My HubSpot")]

        @hookimpl
        def register_actions(self, register):
            register("hubspot", Action(name="mine", display_name="Mine", run=echo))

    def with_mine():
        pm = create_plugin_manager()
        pm.register(MyHubspot(), name="my_hubspot")
        return pm

    with pytest.raises(PluginError, match=r"'hubspot' is already defined by plugin 'hubspot' \(distribution 'patchbay-server'\).*replace"):
        load_registry(with_mine())
    registry = load_registry(with_mine(), replace=["my_hubspot"])
    assert registry.provider("hubspot").display_name == "My HubSpot"
    assert set(registry.get("actions", "hubspot")) == {"mine"}
    assert registry.get("crm_mappers", "hubspot") is None
    assert registry.provider("salesforce") is not None


BROKEN_MODULE = """
    raise ImportError("no module named acme_sdk")
"""


@pytest.mark.slow  # about 5 s (setup and call)
def test_broken_pack_is_named_or_skipped_and_shown_in_health_and_cli(install, make_app, monkeypatch, tmp_path):
    install("acme-broken", {"patchbay.providers": {"acme_broken": "acme_broken_module"}}, {"acme_broken_module": BROKEN_MODULE})
    with pytest.raises(PluginError, match=r"'acme_broken' \(acme-broken.*acme_sdk"):
        make_app()

    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "cli"))
    result = CliRunner().invoke(cli, ["providers", "list"])
    assert result.exit_code == 1 and "broken plugin: plugin 'acme_broken'" in result.output
    assert "Traceback" not in result.output

    monkeypatch.setenv("PATCHBAY_PLUGINS_SKIP_BROKEN", "true")
    result = CliRunner().invoke(cli, ["providers", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert "plugin 'acme_broken' (acme-broken) left out" in result.stderr
    assert "hubspot" in result.stdout


async def test_skipped_pack_is_listed_by_health(install, make_settings, aiohttp_client):
    install("acme-broken", {"patchbay.providers": {"acme_broken": "acme_broken_module"}}, {"acme_broken_module": BROKEN_MODULE})
    settings = make_settings()
    settings.plugins.skip_broken = True
    client = await aiohttp_client(create_app(settings, background=False, migrate=False))
    response = await client.get("/health")
    body = await response.json()
    assert response.status == 200 and body["status"] == "degraded"
    assert [(e["plugin"], e["distribution"], "acme_sdk" in e["error"]) for e in body["pluginErrors"]] == [("acme_broken", "acme-broken", True)]
    assert client.server.app[SERVICES].registry.provider("hubspot") is not None


def test_pack_crashing_in_a_hook_is_skipped_by_the_setting():
    class Crashing:
        @hookimpl
        def register_providers(self):
            raise RuntimeError("boom")

    pm = create_plugin_manager(entry_point_groups=())
    pm.register(Crashing(), name="crashing")
    registry = load_registry(pm, skip_broken=True)
    assert [(e.plugin, "boom" in e.error) for e in registry.load_errors] == [("crashing", True)]
