"""Each data-only provider is a plugin of its own: entry points generated from the definition files
at build time and in sync with the source tree, one plugin per provider named like it, and ``[plugins]
disable`` / ``replace`` working per provider."""

from importlib.metadata import distribution
from pathlib import Path

import pytest

from patchbay import Provider, hookimpl
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import PluginError, load_registry
from patchbay.providers import catalog
from patchbay.providers.catalog import entries
from patchbay.providers.catalog.entry_points import EntryPointError, provider_entry_points

SOURCE = Path(__file__).resolve().parents[2] / "providers"


def test_installed_entry_points_match_the_source_tree():
    """After adding a definition file or a pack, run ``pip install -e .`` again."""
    installed = sorted(f"{ep.name} = {ep.value}" for ep in distribution("patchbay-server").entry_points if ep.group == "patchbay.providers")
    assert installed == sorted(provider_entry_points(SOURCE)), "the installed entry points are stale: run `pip install -e .`"


def test_data_only_providers_get_an_entry_point_each_and_packs_keep_theirs():
    lines = provider_entry_points(SOURCE)
    assert "github = patchbay.providers.catalog.entries:github" in lines
    assert "1password-scim = patchbay.providers.catalog.entries:1password_scim" in lines
    assert "meta = patchbay.providers.meta" in lines
    assert not [line for line in lines if line.startswith(("facebook ", "hubspot = patchbay.providers.catalog", "catalog "))]
    assert len(lines) == len(catalog.names()) - 16 + 13  # 16 providers belong to the 13 packs with behaviour


def test_generation_refuses_what_would_collide(tmp_path):
    definitions = tmp_path / "providers" / "catalog" / "definitions"
    definitions.mkdir(parents=True)
    for name in ("acme-crm", "acme_crm"):
        (definitions / f"{name}.toml").write_text(f'name = "{name}"\n')
    (definitions / "README.md").write_text("not a definition")
    with pytest.raises(EntryPointError, match="'acme_crm'.*':acme_crm' is already used by catalog provider 'acme-crm'"):
        provider_entry_points(tmp_path / "providers")
    (definitions / "acme_crm.toml").unlink()
    assert provider_entry_points(tmp_path / "providers") == ["acme-crm = patchbay.providers.catalog.entries:acme_crm"]
    (definitions / "acme-crm.toml").rename(definitions / "acme.toml")
    pack = tmp_path / "providers" / "acme"
    pack.mkdir()
    (pack / "__init__.py").write_text("PROVIDERS = ('acme', 'acme-sandbox')\n")
    with pytest.raises(EntryPointError, match=r"\['acme-sandbox'\] are claimed by packs \['acme'\]"):
        provider_entry_points(tmp_path / "providers")
    (pack / "__init__.py").write_text("PROVIDERS = tuple(NAMES)\n")
    with pytest.raises(EntryPointError, match="literal tuple"):
        provider_entry_points(tmp_path / "providers")


def test_each_data_only_provider_is_its_own_plugin():
    pm = create_plugin_manager()
    registry = load_registry(pm)
    assert registry.provider_pack["github"] == "github" and pm.distribution("github") == "patchbay-server"
    assert pm.get_plugin("github") is entries.github
    with pytest.raises(AttributeError, match="no definition file for the attribute 'no_such_provider'"):
        entries.no_such_provider  # noqa: B018


def test_disable_leaves_out_one_data_only_provider():
    registry = load_registry(create_plugin_manager(disable=["github", "1password-scim"]))
    assert registry.provider("github") is None and registry.provider("1password-scim") is None
    assert registry.provider("gitlab") is not None and registry.provider("hubspot") is not None


@pytest.mark.slow  # about 2 s (setup and call)
def test_replace_takes_over_one_data_only_provider():
    class MyGithub:
        @hookimpl
        def register_providers(self):
            return [
                Provider(
                    name="github",
                    display_name="GitHub Enterprise",
                    category="dev-tools",
                    auth_mode="api_key",
                    api_base_url="https://github.internal.test/api/v3",
                    credential_headers={"authorization": "token {api_key}"},
                )
            ]

    def with_mine():
        pm = create_plugin_manager()
        pm.register(MyGithub(), name="my_github")
        return pm

    with pytest.raises(PluginError, match=r"'github' is already defined by plugin 'github' \(distribution 'patchbay-server'\)"):
        load_registry(with_mine())
    registry = load_registry(with_mine(), replace=["my_github"])
    assert registry.provider("github").display_name == "GitHub Enterprise" and registry.provider_pack["github"] == "my_github"
    assert registry.provider("gitlab") is not None
