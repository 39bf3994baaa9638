"""Loading the definition files: a broken file stops the load naming the file and the provider
(and its own plugin, which ``skip_broken`` leaves out alone); each call builds fresh objects; the
index of parsed files is used only while the files are unchanged; [providers.<name>] overrides
apply through the app, an unknown key is refused."""

import json
import os
import shutil
import tomllib

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import PluginError, load_registry
from patchbay.providers import catalog
from patchbay.providers.catalog.definition_file import render

GOOD = {
    "name": "acme",
    "display_name": "Acme",
    "category": "crm",
    "auth_mode": "api_key",
    "api_base_url": "https://api.acme.io",
    "credential_headers": {"x-api-key": "{api_key}"},
}


def _inline(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_inline(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(item) for item in value) + "]"
    return json.dumps(value)


def toml(definition: dict) -> str:
    """A definition file's text; what ``render`` refuses to write (a key that is no field, a value
    of the wrong type: the mistakes under test) goes first, as inline TOML."""
    tables = {"credential_headers", "credential_query", "connection_param_defaults", "retry_headers"}
    fits = {key for key, value in definition.items() if (key in tables) == isinstance(value, dict) and key in {*GOOD, *tables, "scopes", "webhooks"}}
    first = "".join(f"{key} = {_inline(value)}\n" for key, value in definition.items() if key not in fits)
    return first + render({key: value for key, value in definition.items() if key in fits})


def write(folder, *definitions):
    folder.mkdir(exist_ok=True)
    for definition in definitions:
        (folder / f"{definition['name']}.toml").write_text(toml(definition))
    return folder


def test_definition_files_load_into_providers(tmp_path):
    nested = {**GOOD, "name": "other", "retry_headers": {"retry_after": "retry-after"}, "scopes": ["a", "b"]}
    providers = catalog.load_definitions(write(tmp_path / "definitions", nested, GOOD))
    assert [p.name for p in providers] == ["acme", "other"]
    assert providers[1].retry_headers.retry_after == "retry-after" and providers[1].scopes == ("a", "b")
    assert catalog.names(tmp_path / "definitions") == ["acme", "other"]


def test_an_unknown_key_fails_naming_the_file_the_provider_and_the_key(tmp_path):
    folder = write(tmp_path / "definitions", GOOD, {**GOOD, "name": "typo-co", "scope": ["read"]})
    with pytest.raises(catalog.CatalogError, match=r"definitions/typo-co\.toml: provider 'typo-co': .*scope"):
        catalog.load_definitions(folder)
    assert catalog.definition("acme", folder).name == "acme"  # the other files still load


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


def test_a_file_must_be_named_after_its_provider_and_be_toml(tmp_path):
    folder = tmp_path / "definitions"
    folder.mkdir()
    (folder / "acme.toml").write_text(render({**GOOD, "name": "acme-crm"}))
    (folder / "other.toml").write_text('name = "other"\ndisplay_name = "Other\n')
    (folder / "notes.txt").write_text("not a definition")
    with pytest.raises(catalog.CatalogError, match=r"definitions/acme\.toml: provider 'acme': name must be the file's name 'acme', not 'acme-crm'"):
        catalog.definition("acme", folder)
    with pytest.raises(catalog.CatalogError, match=r"definitions/other\.toml: not valid TOML"):
        catalog.definition("other", folder)
    assert catalog.names(folder) == ["acme", "other"]
    with pytest.raises(catalog.CatalogError, match=r"no provider named 'nope' \(no file definitions/nope\.toml\)"):
        catalog.definition("nope", folder)


def broken_copy(tmp_path, name: str, text: str | None = None, **changes):
    """A copy of the catalog's definitions with ``changes`` made to the file of ``name`` (or its
    text replaced)."""
    folder = tmp_path / "definitions"
    shutil.copytree(catalog.DEFINITIONS, folder)
    path = folder / f"{name}.toml"
    path.write_text(text if text is not None else toml({**tomllib.loads(path.read_text()), **changes}))
    return folder


def test_a_broken_definition_stops_the_registry_naming_its_plugin_and_file(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DEFINITIONS", broken_copy(tmp_path, "github", colour="red"))
    with pytest.raises(PluginError, match=r"plugin 'github'.*definitions/github\.toml: provider 'github'.*colour"):
        load_registry(create_plugin_manager())


def test_a_broken_file_is_left_out_alone_by_skip_broken(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DEFINITIONS", broken_copy(tmp_path, "github", text="name = 'github\n"))
    registry = load_registry(create_plugin_manager(), skip_broken=True)
    assert [error.plugin for error in registry.load_errors] == ["github"]
    assert "definitions/github.toml: not valid TOML" in str(registry.load_errors[0])
    assert registry.provider("github") is None and registry.provider("gitlab") is not None


def test_an_invalid_definition_is_refused_by_the_registry(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "DEFINITIONS", broken_copy(tmp_path, "github", api_base_url="http://api.github.test"))
    with pytest.raises(PluginError, match=r"plugin 'github': provider 'github': api_base_url must be an https URL"):
        load_registry(create_plugin_manager())


# -- the index of parsed files -----------------------------------------------------------------


@pytest.fixture
def indexed(tmp_path, monkeypatch):
    """A catalog folder treated as the installed one, its index under a cache directory of its own."""
    folder = write(tmp_path / "definitions", GOOD, {**GOOD, "name": "other"})
    monkeypatch.setattr(catalog, "INSTALLED", folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    catalog._index.cache_clear()
    catalog._names.cache_clear()
    yield folder
    catalog._index.cache_clear()
    catalog._names.cache_clear()


def _load(folder):
    """A fresh process's load of ``folder`` (what this process parsed is forgotten)."""
    catalog._index.cache_clear()
    catalog._names.cache_clear()
    return {provider.name: provider for provider in catalog.load_definitions(folder)}


def test_the_index_spares_parsing_unchanged_files_only(indexed, tmp_path, monkeypatch):
    assert _load(indexed)["acme"].display_name == "Acme"
    [index] = (tmp_path / "cache" / "patchbay").glob("catalog-*.json")
    assert set(json.loads(index.read_text())["definitions"]) == {"acme", "other"}

    parsed = []
    read_file = catalog.read_file
    monkeypatch.setattr(catalog, "read_file", lambda folder, name: parsed.append(name) or read_file(folder, name))
    assert _load(indexed)["acme"].display_name == "Acme" and parsed == []  # every file from the index

    (indexed / "acme.toml").write_text(toml({**GOOD, "display_name": "Acme Corp"}))
    os.utime(indexed / "acme.toml", ns=(1, 1))  # a changed file with any modification time
    assert _load(indexed)["acme"].display_name == "Acme Corp" and parsed == ["acme", "other"]
    parsed.clear()
    write(indexed, {**GOOD, "name": "third"})
    assert sorted(_load(indexed)) == ["acme", "other", "third"] and parsed == ["acme", "other", "third"]
    parsed.clear()
    (indexed / "third.toml").unlink()
    assert sorted(_load(indexed)) == ["acme", "other"] and parsed == ["acme", "other"]


def test_an_indexed_definition_is_checked_like_a_file(indexed, tmp_path):
    _load(indexed)
    [index] = (tmp_path / "cache" / "patchbay").glob("catalog-*.json")
    content = json.loads(index.read_text())
    content["definitions"]["acme"]["colour"] = "red"  # an index written by hand still cannot smuggle a key in
    index.write_text(json.dumps(content))
    with pytest.raises(catalog.CatalogError, match=r"provider 'acme': .*colour"):
        _load(indexed)
    content["definitions"]["acme"] = {**GOOD, "name": "impostor"}  # an entry that is not its file's is not taken
    index.write_text(json.dumps(content))
    assert "impostor" not in _load(indexed)
    index.write_text("{not json")
    assert sorted(_load(indexed)) == ["acme", "other"]  # a damaged index is rewritten from the files
    assert set(json.loads(index.read_text())["definitions"]) == {"acme", "other"}


def test_a_broken_file_is_not_indexed_and_no_index_is_written_where_none_can_be(indexed, tmp_path, monkeypatch):
    (indexed / "other.toml").write_text("name = [")
    with pytest.raises(catalog.CatalogError, match="other.toml: not valid TOML"):
        _load(indexed)
    [index] = (tmp_path / "cache" / "patchbay").glob("catalog-*.json")
    assert set(json.loads(index.read_text())["definitions"]) == {"acme"}
    (tmp_path / "readonly").write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "readonly"))
    (indexed / "other.toml").write_text(toml({**GOOD, "name": "other"}))
    assert sorted(_load(indexed)) == ["acme", "other"]  # parsed; the index could not be written


def test_only_the_installed_catalog_is_indexed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    catalog.load_definitions(write(tmp_path / "elsewhere", GOOD))
    assert not (tmp_path / "cache").exists()


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
    cases = [("webhooks", '"no"'), ("scopes", '"read"'), ("display_name", "7"), ("credential_headers", "{ x = 1 }"), ("docs_url", "2024-01-01")]
    for index, (key, value) in enumerate(cases):
        folder = tmp_path / f"case{index}"
        folder.mkdir()
        others = render({k: v for k, v in GOOD.items() if k not in (key, "credential_headers")})
        (folder / "acme.toml").write_text(
            f"{key} = {value}\n{others}" + ("" if key == "credential_headers" else '[credential_headers]\nx-api-key = "{api_key}"\n')
        )
        with pytest.raises(catalog.CatalogError, match=rf"provider 'acme': .*{key}"):
            catalog.load_definitions(folder)


def test_a_nested_override_table_becomes_the_nested_object(make_app):
    app = make_app(providers={"hubspot": {"retry_headers": {"retry_after": "retry-after"}}})
    retry = app[SERVICES].registry.provider("hubspot").retry_headers
    assert (retry.retry_after, retry.remaining) == ("retry-after", None)  # the table replaces the whole object
    with pytest.raises(PluginError, match=r"\[providers.hubspot\].*retry_afterr"):
        make_app(providers={"hubspot": {"retry_headers": {"retry_afterr": "x"}}})
