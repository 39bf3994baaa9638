"""A plugin's own settings section (``register_settings``): the billing plugin's ``[stripe]`` is
read from the file's table and ``PATCHBAY_STRIPE_*`` variables through the registry; unknown keys,
undeclared tables and sections named like core settings are refused naming them."""

import pytest
from click.testing import CliRunner

from patchbay import hookimpl
from patchbay.cli.main import cli
from patchbay.core.appkeys import SERVICES
from patchbay.core.plugins.registry import PluginError, PluginSettingsError
from patchbay.core.settings import Settings, load_settings
from patchbay.plugins.stripe import StripeSettings


def test_the_core_settings_know_nothing_of_stripe():
    assert "stripe" not in {field for field in Settings.__annotations__}


def test_stripe_section_comes_from_the_file_table_and_the_environment(tmp_path, make_app):
    config = tmp_path / "patchbay.toml"
    config.write_text('[stripe]\nsecret_key = "sk_file"\nprice_starter = "price_1"\nwebhook_tolerance_seconds = 60\n')
    settings = load_settings({}, {"PATCHBAY_CONFIG": str(config), "PATCHBAY_STRIPE_SECRET_KEY": "sk_env", "PATCHBAY_SECRET_KEY": "k"})
    assert settings.plugin_sections == {"stripe": {"secret_key": "sk_file", "price_starter": "price_1", "webhook_tolerance_seconds": 60}}
    app = make_app(plugin_sections=settings.plugin_sections, plugin_environ=settings.plugin_environ)
    stripe = app[SERVICES].registry.plugin_settings("stripe")
    assert stripe == StripeSettings(secret_key="sk_env", price_starter="price_1", webhook_tolerance_seconds=60)
    assert make_app()[SERVICES].registry.plugin_settings("stripe") == StripeSettings()


@pytest.mark.parametrize(
    ("sections", "environ", "message"),
    [
        ({"stripe": {"secret_kee": "x"}}, {}, r"\[stripe\]: unknown key\(s\) secret_kee"),
        ({"stripe": {"webhook_tolerance_seconds": "soon"}}, {}, r"\[stripe\] webhook_tolerance_seconds: 'soon' is not valid"),
        ({}, {"PATCHBAY_STRIPE_WEBHOOK_TOLERANCE_SECONDS": "soon"}, r"PATCHBAY_STRIPE_WEBHOOK_TOLERANCE_SECONDS: 'soon' is not valid"),
        ({"strpe": {"secret_key": "x"}}, {}, r"\[strpe\]: no loaded plugin declares this settings section"),
    ],
)
def test_bad_plugin_sections_are_refused_naming_them(make_app, sections, environ, message):
    with pytest.raises(PluginSettingsError, match=message):
        make_app(plugin_sections=sections, plugin_environ=environ)


def test_a_disabled_plugins_section_is_refused(make_settings):
    from patchbay.core.app import create_app

    settings = make_settings(plugin_sections={"stripe": {"secret_key": "x"}})
    settings.plugins.disable = ["stripe_billing"]
    with pytest.raises(PluginSettingsError, match=r"\[stripe\]: no loaded plugin declares"):
        create_app(settings, background=False, migrate=False)


def test_a_plugin_cannot_take_a_core_section(make_app):
    class Greedy:
        @hookimpl
        def register_settings(self, register):
            register("smtp", StripeSettings)

    with pytest.raises(PluginError, match=r"register_settings names \[smtp\], which is a core setting"):
        make_app(plugins=[Greedy()])


def test_the_cli_names_a_bad_plugin_section(tmp_path, monkeypatch):
    config = tmp_path / "patchbay.toml"
    config.write_text("[stripe]\nsecret_kee = 1\n")
    monkeypatch.setenv("PATCHBAY_CONFIG", str(config))
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(cli, ["providers", "list"])
    assert result.exit_code == 1 and "[stripe]: unknown key(s) secret_kee" in result.output and "Traceback" not in result.output
