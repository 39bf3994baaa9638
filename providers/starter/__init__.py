"""A first built-in pack: a few real providers, loaded through the same entry point group as any
third-party pack."""

from patchbay import Provider, RetryHeaders, hookimpl


@hookimpl
def register_providers():
    return [
        Provider(
            name="hubspot",
            display_name="HubSpot",
            category="crm",
            categories=("marketing", "support"),
            auth_mode="oauth2",
            authorization_url="https://app.hubspot.com/oauth/authorize",
            token_url="https://api.hubapi.com/oauth/v1/token",
            api_base_url="https://api.hubapi.com",
            scopes=("oauth", "crm.objects.contacts.read", "crm.objects.contacts.write"),
            retry_headers=RetryHeaders(remaining="x-hubspot-ratelimit-remaining"),
            webhooks=True,
            capabilities=("oauth", "proxy", "webhook_receive"),
        ),
        Provider(
            name="stripe",
            display_name="Stripe",
            category="payment",
            auth_mode="api_key",
            api_base_url="https://api.stripe.com",
            credential_headers={"authorization": "Bearer {api_key}"},
            health_check="GET /v1/balance",
        ),
        Provider(
            name="github",
            display_name="GitHub",
            category="dev-tools",
            auth_mode="oauth2",
            authorization_url="https://github.com/login/oauth/authorize",
            token_url="https://github.com/login/oauth/access_token",
            api_base_url="https://api.github.com",
            scopes=("repo",),
            capabilities=("oauth", "proxy"),
            retry_headers=RetryHeaders(reset_at="x-ratelimit-reset", remaining="x-ratelimit-remaining"),
        ),
    ]
