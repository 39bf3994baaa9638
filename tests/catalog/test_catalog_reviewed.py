"""The 100 most used providers, reviewed against their own documentation: each links its
authentication docs (``docs_url``), and what the connect form asks of an end user for it is in the
provider's words. The list: every provider with declared actions or triggers, then the best-known
of each category (AI, payments, HR and ATS, marketing and email, support, analytics, developer
tools, identity)."""

from __future__ import annotations

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.fields import form_fields

#: the providers with declared actions or triggers
WITH_ACTIONS = (
    "airtable",
    "airtable-pat",
    "asana",
    "attio",
    "box",
    "calendly",
    "clickup",
    "confluence-basic",
    "discord",
    "docusign",
    "docusign-sandbox",
    "dropbox",
    "facebook",
    "freshdesk",
    "github",
    "github-pat",
    "gitlab",
    "gitlab-pat",
    "google-calendar",
    "google-drive",
    "google-mail",
    "google-sheet",
    "hubspot",
    "intercom",
    "jira-basic",
    "linear",
    "mailchimp",
    "microsoft-teams",
    "monday",
    "notion",
    "outlook",
    "pipedrive",
    "quickbooks",
    "quickbooks-sandbox",
    "salesforce",
    "salesforce-sandbox",
    "sendgrid",
    "shopify",
    "shopify-api-key",
    "shopify-cc",
    "slack",
    "stripe",
    "stripe-api-key",
    "trello",
    "twilio",
    "typeform",
    "woocommerce",
    "xero",
    "zendesk",
    "zendesk-api-key",
    "zoom",
)
#: the best-known providers of each category besides them
BEST_KNOWN = (
    "anthropic",
    "openai",
    "gong",
    "greenhouse-basic",
    "bamboohr-basic",
    "workable",
    "personio",
    "chargebee",
    "paddle",
    "klaviyo",
    "mailgun",
    "resend",
    "freshservice",
    "sentry",
    "datadog",
    "vercel",
    "cloudflare",
    "mixpanel",
    "amplitude",
    "posthog",
    "coda",
    "apollo",
    "algolia",
    "elevenlabs",
    "perplexity",
    "freshsales",
    "brevo-api-key",
    "instantly",
    "ashby",
    "rippling",
    "toggl",
    "supabase",
    "okta",
    "auth0",
    "contentful",
    "bigcommerce",
    "qualtrics",
    "gorgias",
    "servicenow",
    "jira",
    "confluence",
    "bitbucket",
    "pagerduty",
    "figma",
    "miro",
    "linkedin",
    "lever",
    "brex",
    "gusto",
)
REVIEWED = WITH_ACTIONS + BEST_KNOWN
#: labels the auth modes give by default: a reviewed API-key or basic provider names its fields in its own words or keeps these knowingly
GENERIC = {"Username", "Password", "API secret"}


def test_there_are_one_hundred_distinct_installed_providers(make_app):
    providers = make_app()[SERVICES].registry.providers
    assert len(REVIEWED) == len(set(REVIEWED)) == 100
    assert set(REVIEWED) <= set(providers)
    with_actions = {
        name for name in (*make_app()[SERVICES].registry.objects("actions"), *make_app()[SERVICES].registry.objects("triggers")) if name in providers
    }
    assert with_actions <= set(REVIEWED), "every provider with declared actions is reviewed"


def test_each_links_its_docs_and_names_its_fields_in_its_own_words(make_app):
    providers = make_app()[SERVICES].registry.providers
    for name in REVIEWED:
        provider = providers[name]
        assert provider.docs_url and provider.docs_url.startswith("https://"), f"{name} has no docs_url"
        for field in form_fields(provider):
            assert field.label not in GENERIC or name == "mailgun", f"{name}: {field.label!r} is the auth mode's word, not the provider's"
            assert field.help or field.group == "params" and provider.auth_mode == "oauth2", f"{name}: {field.label} has no help"
