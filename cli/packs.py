"""``patchbay packs``: the installed provider packs and plugins, and checking one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

import click

from patchbay.cli.runtime import emit, json_option, registry_from, settings_from


def _inventory(*, skip_broken: bool) -> tuple[list[dict], frozenset[str]]:
    """Every installed plugin (``describe_plugins``), and the names of the loaded ones that are
    built-in data-only providers (one generated plugin each)."""
    from patchbay.core.plugins.inventory import describe_plugins

    settings = settings_from()
    settings.plugins = settings.plugins.model_copy(update={"skip_broken": skip_broken})
    pm, registry = registry_from(settings, quiet=True)
    data_only = frozenset(name for plugin in pm.get_plugins() if getattr(plugin, "data_only", False) and (name := pm.get_name(plugin)))
    return describe_plugins(pm, registry, disabled=frozenset(settings.plugins.disable)), data_only


@click.group("packs")
def packs() -> None:
    """Installed provider packs and plugins."""


def _line(item: dict, providers: str) -> str:
    return f"{item['name']:<24} {item['distribution']} {item['version'] or ''} [{item['status']}] {providers}"


def _plugin_lines(item: dict, *, every_provider: bool) -> list[str]:
    names = item["providers"]
    shown = ", ".join(names) if every_provider or len(names) <= 5 else ", ".join(names[:5]) + f" (+{len(names) - 5})"
    if not names and item["hooks"]:
        shown = "hooks: " + ", ".join(item["hooks"])
    return [_line(item, shown)] + ([f"    error: {item['error']}"] if item["error"] else [])


def _summary(data_only: list[dict]) -> str:
    first = data_only[0]
    row = {**first, "name": "(data-only providers)"}
    return _line(row, f"{len(data_only)} built-in data-only providers, one plugin each (--providers lists them)")


@packs.command("list")
@click.option("--providers", "every_provider", is_flag=True, help="List every plugin and every provider, each built-in data-only provider on its own line.")
@json_option
def packs_list(every_provider: bool, as_json: bool) -> None:
    """Each installed pack and plugin: distribution, version, status, providers and load error; the
    built-in data-only providers (loaded, one generated plugin each) summarised in one row unless
    --providers. --json lists every plugin, with its hooks."""
    data, data_only_names = _inventory(skip_broken=True)
    data_only = [item for item in data if item["name"] in data_only_names and item["status"] == "loaded"]
    lines = [_summary(data_only)] if data_only and not every_provider else []
    for item in data:
        if every_provider or item not in data_only:
            lines += _plugin_lines(item, every_provider=every_provider)
    emit(data, as_json, "\n".join(lines) or "no plugins")


@packs.command("check")
@click.argument("name")
@json_option
def packs_check(name: str, as_json: bool) -> None:
    """Load every plugin and report whether NAME loads cleanly (exit 1 when it does not)."""
    found = [item for item in _inventory(skip_broken=True)[0] if item["name"] == name]
    if not found:
        raise click.ClickException(f"no installed plugin named {name!r} (see `patchbay packs list`)")
    item = found[0]
    if item["status"] == "error":
        raise click.ClickException(f"plugin {name!r} ({item['distribution']}) is broken: {item['error']}")
    emit(item, as_json, f"{name}: {item['status']}, {len(item['providers'])} provider(s), hooks: {', '.join(item['hooks'])}")


TEMPLATES = Path(__file__).with_name("pack_template")
#: patchbay's distribution name on PyPI, which a pack depends on (the import name is ``patchbay``;
#: the distribution ``patchbay`` on PyPI is an unrelated project)
DISTRIBUTION = "patchbay-server"
AUTH_FIELDS = {
    "api_key": '            auth_mode="api_key",\n            credential_headers={"x-api-key": "{api_key}"},',
    "basic": '            auth_mode="basic",',
    "oauth2": '            auth_mode="oauth2",\n            capabilities=("oauth", "proxy"),\n'
    '            authorization_url="https://$name.example/oauth/authorize",\n            token_url="https://$name.example/oauth/token",',
}


@dataclass(frozen=True)
class Feature:
    """An extra of ``packs new --with``: its code (``<name>.py.tmpl``, appended to the pack module),
    its tests (``<name>_test.py.tmpl``) and what each needs imported. ``helpers`` is a template put
    before the acceptance suite, whose ``pack_acceptance`` gets ``acceptance`` as more arguments."""

    summary: str
    patchbay_names: tuple[str, ...] = ()
    module_stdlib: tuple[str, ...] = ()
    test_stdlib: tuple[str, ...] = ()
    test_patchbay_names: tuple[str, ...] = ()
    testing_names: tuple[str, ...] = ()
    imports_pack: bool = False
    helpers: str | None = None
    acceptance: str = ""


FEATURES = {
    "action": Feature("the get_me action", patchbay_names=("Action",)),
    "poll": Feature("the new_item poll trigger", patchbay_names=("Trigger",), testing_names=("FakeClient", "registered"), imports_pack=True),
    "webhook": Feature(
        "a signed-webhook handler",
        patchbay_names=("InboundEvent", "WebhookHandler", "hmac_sha256_hex", "signatures_match"),
        module_stdlib=("time",),
        test_stdlib=("json", "time"),
        test_patchbay_names=("hmac_sha256_hex",),
        helpers="webhook_signer.py.tmpl",
        acceptance=", webhook_signer=sign_webhook",
    ),
    "crm": Feature("a CRM mapper", testing_names=("FakeClient", "registered"), imports_pack=True),
}


def _render(template: str, values: dict[str, str]) -> str:
    return Template((TEMPLATES / template).read_text()).substitute(values)


def _class_prefix(name: str) -> str:
    """``my-crm`` -> ``MyCrm``: the prefix of the pack's class names."""
    prefix = "".join(part.capitalize() for part in re.split(r"[._-]", name))
    return prefix if prefix.isidentifier() else f"Pack{prefix}"


def _imports(stdlib: set[str], third_party: list[str], first_party: list[str]) -> str:
    groups = [[f"import {module}" for module in sorted(stdlib)], third_party, first_party]
    return "\n\n".join("\n".join(group) for group in groups if group)


def _names(names: set[str]) -> str:
    return ", ".join(sorted(names, key=lambda name: (not name[0].isupper(), name)))


def scaffold(name: str, auth: str, features: tuple[str, ...], target: Path) -> list[Path]:
    """Write a ready pack for provider ``name`` into ``target``, with the extras ``features`` (keys
    of :data:`FEATURES`, in the order given); the files written."""
    module = "patchbay_" + name.replace("-", "_").replace(".", "_")
    values = {
        "name": name,
        "display": name.replace("-", " ").title(),
        "distribution": f"patchbay-{name}",
        "patchbay_distribution": DISTRIBUTION,
        "module": module,
        "class_prefix": _class_prefix(name),
    }
    chosen = [FEATURES[feature] for feature in features]
    patchbay_names = {"Provider", "hookimpl"}.union(*(feature.patchbay_names for feature in chosen))
    test_patchbay_names = set().union(*(feature.test_patchbay_names for feature in chosen))
    testing_names = {"pack_acceptance"}.union(*(feature.testing_names for feature in chosen))
    test_third_party = ["import pytest"] if chosen else []
    test_third_party += [f"from patchbay import {_names(test_patchbay_names)}"] if test_patchbay_names else []
    values |= {
        "auth_fields": Template(AUTH_FIELDS[auth]).substitute(values),
        "with_summary": "".join(f", {feature.summary}" for feature in chosen),
        "module_imports": _imports(set().union(*(f.module_stdlib for f in chosen)), [f"from patchbay import {_names(patchbay_names)}"], []),
        "test_imports": _imports(
            set().union(*(f.test_stdlib for f in chosen)),
            [*test_third_party, f"from patchbay.testing import {_names(testing_names)}"],
            [f"import {module}"] if any(f.imports_pack for f in chosen) else [],
        ),
        "test_helpers": "".join(_render(f.helpers, values) for f in chosen if f.helpers),
        "acceptance_options": "".join(f.acceptance for f in chosen),
        "feature_code": "".join(_render(f"{feature}.py.tmpl", values) for feature in features),
        "feature_tests": "".join(_render(f"{feature}_test.py.tmpl", values) for feature in features),
    }
    files = {
        "pyproject.toml": "pyproject.toml.tmpl",
        f"{module}/__init__.py": "module.py.tmpl",
        f"tests/test_{module}.py": "test_pack.py.tmpl",
        "README.md": "README.md.tmpl",
        ".github/workflows/test.yml": "github/test.yml.tmpl",
    }
    written = []
    for relative, template in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(template, values).rstrip() + "\n")
        written.append(path)
    return written


@packs.command("new")
@click.argument("name")
@click.option("--auth", type=click.Choice(sorted(AUTH_FIELDS)), default="api_key", show_default=True)
@click.option(
    "--with",
    "features",
    default="",
    help="Comma-separated extras, each with its tests: " + "; ".join(f"{key} ({feature.summary})" for key, feature in FEATURES.items()) + ".",
)
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), help="Where to write the pack [./patchbay-NAME].")
def packs_new(name: str, auth: str, features: str, directory: Path | None) -> None:
    """Write a ready provider pack for NAME: pyproject with its entry point, module, tests, README, CI."""
    from patchbay.core.plugins.provider import _NAME

    if not _NAME.match(name):
        raise click.BadParameter("lowercase letters, digits, '.', '_' or '-'", param_hint="NAME")
    chosen = tuple(dict.fromkeys(feature.strip() for feature in features.split(",") if feature.strip()))
    unknown = sorted(set(chosen) - set(FEATURES))
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)} (known: {', '.join(FEATURES)})", param_hint="--with")
    if f"patchbay-{name}" == DISTRIBUTION:
        raise click.BadParameter(f"the pack's distribution would be {DISTRIBUTION}, patchbay's own; choose another name", param_hint="NAME")
    target = directory or Path(f"patchbay-{name}")
    if target.exists() and any(target.iterdir()):
        raise click.ClickException(f"{target} exists and is not empty")
    for path in scaffold(name, auth, chosen, target):
        click.echo(f"wrote {path}")
