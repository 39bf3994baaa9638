"""Every catalog definition, loaded through the real entry point and registry: unique names, https
URLs, known categories, consistent capabilities, and as many providers as the facts support."""

import csv
import os
import string
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from patchbay import CAPABILITIES, CATEGORIES
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.provider import CREDENTIAL_FIELDS, template_fields
from patchbay.core.plugins.registry import load_registry
from patchbay.providers import catalog
from patchbay.providers.catalog import generate

FACTS = Path(os.environ.get("PATCHBAY_PROVIDER_FACTS", generate.DEFAULT_FACTS))
needs_facts = pytest.mark.skipif(not FACTS.exists(), reason=f"the provider facts file is not at {FACTS}")
URL_FIELDS = ("api_base_url", "authorization_url", "token_url", "revocation_url")


@pytest.fixture(scope="module")
def registry():
    return load_registry(create_plugin_manager())


@pytest.fixture(scope="module")
def providers(registry):
    """Every provider of the catalog data as loaded by the registry (from its own entry point or
    from the provider pack with behaviour that claims it)."""
    return {name: registry.providers[name] for name in catalog.names()}


def test_every_catalog_provider_is_installed_as_a_plugin(registry, providers):
    assert len(providers) >= 220
    assert {"hubspot", "stripe", "github", "facebook", "salesforce", "zendesk"} <= set(providers)
    assert registry.provider_pack["github"] == "github" and registry.provider_pack["facebook"] == "meta"
    assert "starter" not in {registry.provider_pack[name] for name in registry.providers}


def test_names_are_unique_across_the_data_files():
    names = [provider.name for provider in catalog.load_definitions()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_each_definition_sits_in_the_file_of_its_primary_category():
    import json

    for path in (Path(catalog.__file__).parent / "data").glob("*.json"):
        assert path.stem in CATEGORIES, path.name
        assert {item["category"] for item in json.loads(path.read_text())} == {path.stem}


def _filled(template: str, provider) -> str:
    values = {field: provider.connection_param_defaults.get(field, "example") for field in template_fields(template)}
    return string.Formatter().vformat(template, (), values)


def test_urls_are_https_or_a_connection_parameter(providers):
    for provider in providers.values():
        for field in URL_FIELDS:
            url = getattr(provider, field)
            if url is None:
                continue
            assert not template_fields(url) & CREDENTIAL_FIELDS, (provider.name, field)
            if url.startswith("{"):
                # an instance URL the provider hands out (Salesforce's instance_url, Pipedrive's api_domain)
                assert url[1 : url.index("}")] in provider.connection_params, (provider.name, field)
                continue
            parts = urlsplit(_filled(url, provider))
            assert parts.scheme == "https" and parts.hostname, (provider.name, field, url)


def test_categories_are_known_and_tags_are_not_categories(providers):
    for provider in providers.values():
        assert set(provider.all_categories) <= CATEGORIES, provider.name
        assert not {"popular", "mcp"} & set(provider.all_categories)
        assert provider.category not in provider.categories, provider.name


def test_primary_categories_are_sensible(providers):
    expected = {
        "hubspot": "crm",
        "salesforce": "crm",
        "pipedrive": "crm",
        "zendesk": "support",
        "stripe": "payment",
        "github": "dev-tools",
        "slack": "communication",
        "xero": "accounting",
        "quickbooks": "accounting",
        "google-ads": "ads",
        "facebook": "ads",
        "shopify": "e-commerce",
        "bamboohr": "hr",
        "greenhouse": "ats",
        "mailchimp": "marketing",
        "dropbox": "storage",
        "notion": "knowledge-base",
    }
    assert {name: providers[name].category for name in expected} == expected


def test_capabilities_are_consistent(providers):
    for provider in providers.values():
        capabilities = set(provider.capabilities)
        assert capabilities <= CAPABILITIES
        assert "proxy" in capabilities, provider.name
        assert ("oauth" in capabilities) == (provider.auth_mode == "oauth2"), provider.name
        assert ("webhook_receive" in capabilities) == provider.webhooks, provider.name
        assert provider.requires_oauth == (provider.auth_mode == "oauth2")
    assert [name for name, p in providers.items() if "lead_sync" in p.capabilities] == ["facebook"]


def test_every_definition_injects_its_credential(providers):
    field_of_mode = {"api_key": {"api_key"}, "basic": {"basic", "username", "password"}, "oauth2": {"access_token"}, "oauth2_cc": {"access_token"}}
    for provider in providers.values():
        templates = [*provider.credential_headers.values(), *provider.credential_query.values()]
        used = set().union(*(template_fields(t) for t in templates))
        assert used & field_of_mode[provider.auth_mode], provider.name
        assert set(provider.connection_param_defaults) <= set(provider.connection_params), provider.name


def test_meta_lead_ads_is_facebook(providers):
    meta = providers["facebook"]
    assert meta.auth_mode == "oauth2" and meta.api_base_url == "https://graph.facebook.com"
    assert meta.authorization_url == "https://www.facebook.com/v22.0/dialog/oauth"
    assert meta.token_url.startswith("https://graph.facebook.com/v22.0/")
    assert meta.scopes == ("leads_retrieval", "pages_show_list", "pages_manage_metadata", "pages_read_engagement", "ads_management")
    assert meta.webhooks is True
    # actions and triggers are derived from the facebook actions and triggers registered for it
    assert set(meta.capabilities) == {"oauth", "proxy", "webhook_receive", "lead_sync", "actions", "triggers"}


def test_mapped_details_of_well_known_providers(providers):
    zoho = providers["zoho-crm"]  # an alias row: zoho's OAuth facts with its own category
    assert zoho.category == "crm" and zoho.token_url == "https://accounts.zoho.{extension}/oauth/v2/token"
    assert zoho.connection_param_defaults == {"extension": "com"}
    salesforce = providers["salesforce"]  # "https://${hostname}/... || https://login.salesforce.com/..."
    assert salesforce.authorization_url == "https://{hostname}/services/oauth2/authorize"
    assert salesforce.connection_param_defaults["hostname"] == "login.salesforce.com"
    assert providers["slack"].scope_separator == ","
    assert providers["slack"].pkce is False  # the facts say Slack refuses PKCE
    assert providers["pipedrive"].token_auth_method == "client_secret_basic"
    assert providers["shopify"].credential_headers == {"x-shopify-access-token": "{access_token}"}
    assert providers["notion"].credential_headers == {"notion-version": "2022-06-28", "authorization": "Bearer {access_token}"}
    assert providers["github"].retry_headers.reset_at == "x-ratelimit-reset"
    assert providers["zendesk"].connection_params == ("subdomain",)
    assert providers["stripe-api-key"].credential_headers["authorization"] == "Basic {basic}"


@needs_facts
def test_every_supported_row_of_the_facts_is_in_the_catalog_or_skipped_with_a_reason(providers):
    with FACTS.open(newline="", encoding="utf-8") as handle:
        rows = {row["slug"]: row for row in csv.DictReader(handle)}
    supported = set()
    for slug in rows:
        try:
            mode = generate.resolve_alias(slug, rows)["auth_mode"]
        except generate.Skip:
            continue
        if mode in generate.AUTH_MODES:
            supported.add(slug)
    reasons = dict(generate.generate(FACTS).skipped)
    assert all(reasons.values())
    supported_but_skipped = supported & set(reasons)
    assert len(supported_but_skipped) <= 25, sorted(supported_but_skipped)
    assert set(providers) == supported - supported_but_skipped
    assert len(providers) == len(supported) - len(supported_but_skipped)


def test_revocation_urls_reach_aliases_on_the_same_server_only(providers):
    assert providers["google"].revocation_url == "https://oauth2.googleapis.com/revoke"
    assert providers["google-calendar"].revocation_url == providers["google"].revocation_url  # an alias of google
    assert providers["okta"].revocation_url == "https://{subdomain}.okta.com/oauth2/v1/revoke"
    assert providers["okta-preview"].revocation_url is None  # its own token server
    assert providers["salesforce"].revocation_url == "https://{hostname}/services/oauth2/revoke"
    with_revocation = [p for p in providers.values() if p.revocation_url]
    assert all(p.auth_mode == "oauth2" for p in with_revocation)


def test_connection_parameters_are_identifiers_that_str_format_can_fill(providers):
    for provider in providers.values():
        for param in provider.connection_params:
            assert param.isidentifier(), (provider.name, param)
        values = {param: "x" for param in provider.connection_params}
        for field in URL_FIELDS:
            url = getattr(provider, field)
            if url:
                assert "{" not in url.format_map(values), (provider.name, field)
