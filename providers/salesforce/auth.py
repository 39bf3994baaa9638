"""Salesforce authentication: the API of a Salesforce org lives at the org's own ``instance_url``,
which Salesforce returns with every token (code exchange and refresh) instead of a fixed API host.
The catalog definition's ``api_base_url`` is ``{instance_url}``; this handler fills that connection
parameter from the token response, so a login does not ask for it and a refresh that moves the org
(a My Domain change) follows it."""

from __future__ import annotations

import attrs

from patchbay import ProviderAuth


class SalesforceAuth(ProviderAuth):
    learned_params = ("instance_url",)

    def token_set(self, provider, body):
        tokens = super().token_set(provider, body)
        params = dict(tokens.params)
        metadata = dict(tokens.metadata)
        if isinstance(body.get("instance_url"), str) and body["instance_url"].startswith(
            ("https://", "http://")
        ):  # the outbound guard refuses http in production
            params["instance_url"] = body["instance_url"].rstrip("/")
        if isinstance(body.get("id"), str):
            metadata["identity_url"] = body["id"]  # https://login.salesforce.com/id/<org id>/<user id>
            parts = body["id"].rstrip("/").split("/")
            if len(parts) >= 2:
                metadata["organization_id"], metadata["user_id"] = parts[-2], parts[-1]
        return attrs.evolve(tokens, params=params, metadata=metadata)
