"""The plugin core: hook specs are documented and exercised, broken packs are named, overrides apply,
and a third-party pack installed with pip shows up in the registry over HTTP."""

import inspect
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from patchbay import Action, Provider, hookimpl
from patchbay.core.plugins import hookspecs
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import PluginError, load_registry
from tests.serve_process import ServeProcess

REPO = Path(__file__).resolve().parents[2]
HOOK_NAMES = [name for name, value in vars(hookspecs).items() if name.startswith("register_") and callable(value)]


def test_every_hook_is_documented():
    for name in HOOK_NAMES:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 60, f"{name} needs a docstring that states its contract"
        if name != "register_providers":
            assert ":param register:" in doc, name


def test_every_hook_has_a_test():
    sources = "\n".join(path.read_text() for path in (REPO / "tests").rglob("test_*.py"))
    untested = [name for name in HOOK_NAMES if not re.search(rf"\b{name}\b", sources)]
    assert untested == [], f"hooks that no test exercises: {untested}"


def provider(name="acme", **changes):
    fields = {"name": name, "display_name": "Acme", "category": "crm", "auth_mode": "api_key", "api_base_url": "https://api.acme.test"}
    return Provider(**{**fields, **changes})


class GoodPack:
    @hookimpl
    def register_providers(self):
        return [provider()]

    @hookimpl
    def register_actions(self, register):
        async def run(client, inputs):
            return inputs

        register("acme", Action(name="echo", display_name="Echo", run=run))


def registry_of(*plugins, overrides=None):
    return load_registry(create_plugin_manager(plugins, entry_point_groups=()), overrides)


def test_registry_holds_definitions_and_objects():
    registry = registry_of(GoodPack())
    assert registry.provider("acme").display_name == "Acme"
    assert set(registry.get("actions", "acme")) == {"echo"}


def test_duplicate_provider_names_both_packs():
    class Again:
        @hookimpl
        def register_providers(self):
            return [provider()]

    pm = create_plugin_manager(entry_point_groups=())
    pm.register(GoodPack(), name="first-pack")
    pm.register(Again(), name="second-pack")
    with pytest.raises(PluginError) as raised:
        load_registry(pm)
    assert "second-pack" in str(raised.value) and "first-pack" in str(raised.value) and "'acme'" in str(raised.value)


def test_invalid_definition_names_pack_and_field():
    class Broken:
        @hookimpl
        def register_providers(self):
            return [provider(api_base_url="http://plain.test", category="nonsense")]

    pm = create_plugin_manager(entry_point_groups=())
    pm.register(Broken(), name="broken-pack")
    with pytest.raises(PluginError) as raised:
        load_registry(pm)
    message = str(raised.value)
    assert "broken-pack" in message and "https" in message and "nonsense" in message


def test_failing_hook_names_pack():
    class Crashing:
        @hookimpl
        def register_triggers(self, register):
            raise KeyError("oops")

    pm = create_plugin_manager(entry_point_groups=())
    pm.register(Crashing(), name="crashing-pack")
    with pytest.raises(PluginError, match="crashing-pack.*register_triggers"):
        load_registry(pm)


def test_overrides_replace_fields_keep_secrets_apart_and_refuse_unknown_keys():
    registry = registry_of(GoodPack(), overrides={"acme": {"api_base_url": "https://sandbox.acme.test", "client_id": "cid"}})
    assert registry.provider("acme").api_base_url == "https://sandbox.acme.test"
    assert registry.provider_secrets("acme").client_id == "cid"
    with pytest.raises(PluginError, match=r"\[providers.acme\]: unknown key\(s\) colour"):
        registry_of(GoodPack(), overrides={"acme": {"colour": "red"}})
    with pytest.raises(PluginError, match="no provider named 'ghost'"):
        registry_of(GoodPack(), overrides={"ghost": {}})


def test_pack_registered_with_app_is_served(make_app):
    app = make_app(plugins=[GoodPack()])
    from patchbay.core.appkeys import SERVICES

    assert app[SERVICES].registry.provider("acme") is not None


PACK_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "patchbay-pack-zorblax"
version = "1.0.0"

[project.entry-points."patchbay.providers"]
zorblax = "patchbay_pack_zorblax"
"""

PACK_MODULE = """
from patchbay import Provider, hookimpl


@hookimpl
def register_providers():
    return [Provider(name="zorblax", display_name="Zorblax", category="crm", auth_mode="api_key",
                     api_base_url="https://api.zorblax.test", credential_headers={"x-key": "{api_key}"})]
"""


@pytest.mark.slow  # pip installs a pack
def test_third_party_pack_installed_with_pip_is_served(tmp_path):
    source = tmp_path / "pack"
    (source / "patchbay_pack_zorblax").mkdir(parents=True)
    (source / "pyproject.toml").write_text(PACK_PYPROJECT)
    (source / "patchbay_pack_zorblax" / "__init__.py").write_text(PACK_MODULE)
    site = tmp_path / "site"
    # the test extra brings a setuptools that builds wheels by itself, so no build environment is fetched
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(source)], check=True)

    server = ServeProcess(tmp_path / "data", {"PYTHONPATH": str(site), "PATCHBAY_SECRET_KEY": "k"})
    try:
        workspace = server.cli("workspaces", "create", "--name", "T")
        key = server.cli("api-keys", "create", "--workspace", workspace["id"])["key"]
        server.wait_ready()
        request = urllib.request.Request(f"{server.url}/connect/v1/providers/zorblax", headers={"x-api-key": key})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = json.loads(response.read())
        assert body["name"] == "zorblax" and body["displayName"] == "Zorblax" and body["requiresOAuth"] is False
    finally:
        server.stop()
