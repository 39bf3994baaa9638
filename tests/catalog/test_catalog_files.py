"""Every definition file of the catalog, each checked on its own (one test per file, named after
it: ``pytest tests/catalog/test_catalog_files.py -k trello``): it is TOML, its keys are the fields of
``Provider`` and nothing else, its values have their types, its ``name`` is its file's, and the
definition is valid and consistent (https URLs, known categories, a credential injected, ...).
Every failure names the file."""

import re
import string
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from patchbay import CAPABILITIES, CATEGORIES, Provider
from patchbay.core.plugins.provider import CREDENTIAL_FIELDS, DefinitionError, template_fields
from patchbay.core.plugins.registry import DERIVED_CAPABILITIES
from patchbay.providers import catalog

FOLDER = Path(catalog.__file__).parent / "definitions"
FILES = sorted(FOLDER.glob("*.toml"))
URL_FIELDS = ("api_base_url", "authorization_url", "token_url", "revocation_url")
#: the credential fields that carry each auth mode's credential
CARRIERS = {"api_key": {"api_key"}, "basic": {"basic", "username", "password"}, "oauth2": {"access_token"}, "oauth2_cc": {"access_token"}}


def _filled(template: str, provider: Provider) -> str:
    values = {field: provider.connection_param_defaults.get(field, "example") for field in template_fields(template)}
    return string.Formatter().vformat(template, (), values)


def problems(provider: Provider) -> list[str]:
    """What is wrong with a definition beyond ``Provider.validate`` (which the registry runs too)."""
    found = []
    for field in URL_FIELDS:
        url = getattr(provider, field)
        if url is None:
            continue
        if template_fields(url) & CREDENTIAL_FIELDS:
            found.append(f"{field} must not carry a credential")
        if url.startswith("{"):
            # an instance URL the provider hands out (Salesforce's instance_url, Pipedrive's api_domain)
            if url[1 : url.index("}")] not in provider.connection_params:
                found.append(f"{field} starts with a parameter that is not in connection_params")
            continue
        parts = urlsplit(_filled(url, provider))
        if parts.scheme != "https" or not parts.hostname:
            found.append(f"{field} must be an https URL with a host, not {url!r}")
    if provider.docs_url is not None and not provider.docs_url.startswith("https://"):
        found.append("docs_url must be an https URL")
    if {"popular", "mcp"} & set(provider.all_categories):
        found.append("popular and mcp are tags, not categories")
    if provider.category in provider.categories:
        found.append("categories repeats the primary category")
    capabilities = set(provider.capabilities)
    if "proxy" not in capabilities:
        found.append("capabilities must include proxy")
    derived = capabilities & set(DERIVED_CAPABILITIES.values())
    if derived:
        found.append(f"capabilities {sorted(derived)} are derived by the registry from what packs register, not declared")
    templates = [*provider.credential_headers.values(), *provider.credential_query.values()]
    used = set().union(*(template_fields(template) for template in templates))
    if provider.auth_mode in CARRIERS and not used & CARRIERS[provider.auth_mode]:
        found.append(f"no credential header or query parameter carries the {provider.auth_mode} credential")
    if not set(provider.connection_param_defaults) <= set(provider.connection_params):
        found.append("connection_param_defaults names parameters that are not in connection_params")
    found += [f"connection parameter {param!r} must be an identifier" for param in provider.connection_params if not param.isidentifier()]
    return found


def test_the_catalog_has_its_files():
    assert len(FILES) >= 850
    assert {"hubspot", "github", "facebook", "salesforce", "zendesk", "trello"} <= {path.stem for path in FILES}


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_definition_file(path: Path):
    provider = catalog.definition(path.stem)  # TOML, no unknown key, right types, name == file name (errors name the file)
    assert provider.name == path.stem
    try:
        provider.validate()  # https URLs, declared parameters, known categories and capabilities, ...
    except DefinitionError as error:
        pytest.fail(f"{path.name}: {error}")
    assert set(provider.all_categories) <= CATEGORIES and set(provider.capabilities) <= CAPABILITIES
    assert not problems(provider), f"{path.name}: " + "; ".join(problems(provider))


def test_the_checks_name_what_is_wrong():
    good = catalog.definition("zendesk")
    assert problems(good) == []
    bad = Provider(
        name="acme",
        display_name="Acme",
        category="crm",
        categories=("crm", "popular"),
        auth_mode="api_key",
        api_base_url="https://api.acme.io/{api_key}",
        credential_headers={"x-token": "{access_token}"},
        connection_param_defaults={"region": "eu"},
        capabilities=("actions",),
        docs_url="http://acme.io/docs",
    )
    assert problems(bad) == [
        "api_base_url must not carry a credential",
        "docs_url must be an https URL",
        "popular and mcp are tags, not categories",
        "categories repeats the primary category",
        "capabilities must include proxy",
        "capabilities ['actions'] are derived by the registry from what packs register, not declared",
        "no credential header or query parameter carries the api_key credential",
        "connection_param_defaults names parameters that are not in connection_params",
    ]


def test_the_documented_example_is_a_file_of_the_catalog():
    """docs/providers.md, *Add or correct a provider*, shows Trello's file as it is."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", docs[docs.index("## Add or correct a provider") :], re.S).group(1)
    assert tomllib.loads(example) == tomllib.loads((FOLDER / "trello.toml").read_text(encoding="utf-8"))
