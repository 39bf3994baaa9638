"""Every catalog definition, loaded through the real entry points and registry: each file's provider
installed, and the details of well-known providers. Each file on its own is checked by
test_catalog_files.py."""

import pytest

from patchbay import CAPABILITIES
from patchbay.core.plugins.manager import create_plugin_manager
from patchbay.core.plugins.registry import load_registry
from patchbay.providers import catalog


@pytest.fixture(scope="module")
def registry():
    return load_registry(create_plugin_manager())


@pytest.fixture(scope="module")
def providers(registry):
    """The provider of every definition file as loaded by the registry (from its own entry point or
    from the provider pack with behaviour that claims it)."""
    return {name: registry.providers[name] for name in catalog.names()}


def test_every_catalog_provider_is_installed_as_a_plugin(registry, providers):
    assert len(providers) == len(catalog.names()) >= 850
    assert {"hubspot", "stripe", "github", "facebook", "salesforce", "zendesk"} <= set(providers)
    assert registry.provider_pack["github"] == "github" and registry.provider_pack["facebook"] == "meta"
    assert "starter" not in {registry.provider_pack[name] for name in registry.providers}


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


def test_revocation_urls_reach_aliases_on_the_same_server_only(providers):
    assert providers["google"].revocation_url == "https://oauth2.googleapis.com/revoke"
    assert providers["google-calendar"].revocation_url == providers["google"].revocation_url  # an alias of google
    assert providers["okta"].revocation_url == "https://{subdomain}.okta.com/oauth2/v1/revoke"
    assert providers["okta-preview"].revocation_url is None  # its own token server
    assert providers["salesforce"].revocation_url == "https://{hostname}/services/oauth2/revoke"
    with_revocation = [p for p in providers.values() if p.revocation_url]
    assert all(p.auth_mode == "oauth2" for p in with_revocation)
