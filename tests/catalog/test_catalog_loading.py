"""Loading the data files: a broken definition stops the load naming the provider (and its own
plugin, which ``skip_broken`` leaves out alone); each call builds fresh objects; [providers.<name>]
overrides apply through the app, an unknown key is refused."""

import json

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import PluginError, load_registry
from patchbay.providers import catalog

GOOD = {
    "name": "acme",
    "display_name": "Acme",
    "category": "crm",
    "auth_mode": "api_key",
    "api_base_url": "https://api.acme.io",
    "credential_headers": {"x-api-key": "{api_key}"},
}


def write(folder, *definitions, name="crm.json"):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(list(definitions)))
    return folder


def test_a_data_file_loads_into_providers(tmp_path):
    nested = {**GOOD, "name": "other", "retry_headers": {"retry_after": "retry-after"}, "scopes": ["a", "b"]}
    providers = catalog.load_definitions(write(tmp_path / "data", GOOD, nested))
    assert [p.name for p in providers] == ["acme", "other"]
    assert providers[1].retry_headers.retry_after == "retry-after" and providers[1].scopes == ("a", "b")


def test_an_unknown_key_fails_naming_the_provider_and_the_key(tmp_path):
    folder = write(tmp_path / "data", GOOD, {**GOOD, "name": "typo-co", "scope": ["read"]})
    with pytest.raises(catalog.CatalogError, match=r"crm\.json: provider 'typo-co': .*scope"):
        catalog.load_definitions(folder)


def test_an_unknown_nested_key_and_a_wrong_type_are_named(tmp_path):
    nested = write(tmp_path / "one", {**GOOD, "retry_headers": {"retry_afterr": "x"}})
    with pytest.raises(catalog.CatalogError, match=r"provider 'acme': .*retry_afterr"):
        catalog.load_definitions(nested)
    typed = write(tmp_path / "two", {**GOOD, "webhooks": {"yes": 1}})
    with pytest.raises(catalog.CatalogError, match=r"provider 'acme': .*webhooks"):
        catalog.load_definitions(typed)
    missing = write(tmp_path / "three", {key: value for key, value in GOOD.items() if key != "api_base_url"})
    with pytest.raises(catalog.CatalogError, match=r"provider 'acme': .*api_base_url"):
        catalog.load_definitions(missing)


def broken_copy(tmp_path, name: str, **changes):
    """A copy of the catalog data with ``changes`` made to the definition of ``name``."""
    folder = tmp_path / "data"
    folder.mkdir()
    for path in catalog.DATA.iterdir():
        definitions = json.loads(path.read_text(encoding="utf-8"))
        (folder / path.name).write_text(json.dumps([{**d, **changes} if d["name"] == name else d for d in definitions]))
    return folder


def test_a_broken_definition_stops_the_registry_naming_its_plugin(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DATA", broken_copy(tmp_path, "github", colour="red"))
    with pytest.raises(PluginError, match=r"plugin 'github'.*provider 'github'.*colour"):
        load_registry(create_plugin_manager())


def test_a_broken_definition_is_left_out_alone_by_skip_broken(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DATA", broken_copy(tmp_path, "github", colour="red"))
    registry = load_registry(create_plugin_manager(), skip_broken=True)
    assert [error.plugin for error in registry.load_errors] == ["github"]
    assert registry.provider("github") is None and registry.provider("gitlab") is not None


def test_an_invalid_definition_is_refused_by_the_registry(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DATA", broken_copy(tmp_path, "github", api_base_url="http://api.github.test"))
    with pytest.raises(PluginError, match=r"plugin 'github': provider 'github': api_base_url must be an https URL"):
        load_registry(create_plugin_manager())


def test_each_plugin_manager_gets_its_own_definitions():
    first, second = catalog.load_definitions(), catalog.load_definitions()
    assert first == second
    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_overrides_replace_fields_and_keep_secrets_apart(make_app):
    app = make_app(
        providers={
            "hubspot": {
                "api_base_url": "https://sandbox.hubapi.example",
                "scopes": ["oauth", "crm.objects.contacts.read"],
                "client_id": "cid",
                "client_secret": "shh",
            }
        }
    )
    hubspot = app[SERVICES].registry.provider("hubspot")
    assert hubspot.api_base_url == "https://sandbox.hubapi.example"
    assert hubspot.scopes == ("oauth", "crm.objects.contacts.read")
    assert hubspot.token_url == "https://api.hubapi.com/oauth/v1/token"  # untouched fields stay
    assert app[SERVICES].registry.provider_secrets("hubspot").client_secret == "shh"


def test_override_of_a_templated_url_and_its_defaults(make_app):
    app = make_app(providers={"zendesk": {"api_base_url": "https://{subdomain}.zendesk.example", "connection_param_defaults": {"subdomain": "acme"}}})
    zendesk = app[SERVICES].registry.provider("zendesk")
    assert zendesk.api_base_url == "https://{subdomain}.zendesk.example" and zendesk.connection_param_defaults == {"subdomain": "acme"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hubspot": {"scope": "x"}}, r"\[providers.hubspot\]: unknown key\(s\) scope"),
        ({"nosuchprovider": {"client_id": "x"}}, r"\[providers.nosuchprovider\]: no provider named"),
        ({"zendesk": {"api_base_url": "https://{tenant}.zendesk.example"}}, r"\[providers.zendesk\].*tenant"),
    ],
)
def test_bad_overrides_are_refused_naming_them(make_app, overrides, message):
    with pytest.raises(PluginError, match=message):
        make_app(providers=overrides)


def test_values_of_the_wrong_type_are_not_coerced(tmp_path):
    for index, (key, value) in enumerate([("webhooks", "no"), ("scopes", "read"), ("display_name", 7), ("credential_headers", {"x": 1})]):
        folder = write(tmp_path / f"case{index}", {**GOOD, key: value})
        with pytest.raises(catalog.CatalogError, match=rf"provider 'acme': .*{key}"):
            catalog.load_definitions(folder)


def test_a_nested_override_table_becomes_the_nested_object(make_app):
    app = make_app(providers={"hubspot": {"retry_headers": {"retry_after": "retry-after"}}})
    retry = app[SERVICES].registry.provider("hubspot").retry_headers
    assert (retry.retry_after, retry.remaining) == ("retry-after", None)  # the table replaces the whole object
    with pytest.raises(PluginError, match=r"\[providers.hubspot\].*retry_afterr"):
        make_app(providers={"hubspot": {"retry_headers": {"retry_afterr": "x"}}})
