"""Meta (Facebook) authentication for the provider named ``facebook`` (Meta Lead Ads).

Meta's code exchange returns a short-lived user token (about two hours) and no refresh token. This
handler trades it at once for a long-lived token (about 60 days, ``grant_type=fb_exchange_token``)
and records the Meta user the connection belongs to (``/me``: metadata ``user_id``, ``user_name``),
which is how Meta's deauthorization callback (a signed request naming the user) finds the
connections to disconnect. Meta has no refresh grant: the definition says ``refreshes = false``,
and an expired connection is reported by its health check until the user connects again."""

from __future__ import annotations

import aiohttp
import attrs

from patchbay import ProviderAuth, ProviderAuthError


class FacebookAuth(ProviderAuth):
    async def exchange_code(self, ctx, *, code, redirect_uri, code_verifier):
        short = await super().exchange_code(ctx, code=code, redirect_uri=redirect_uri, code_verifier=code_verifier)
        params = {
            "grant_type": "fb_exchange_token",
            "client_id": ctx.app.client_id,
            "client_secret": ctx.app.client_secret or "",
            "fb_exchange_token": short.access_token,
        }
        body = await self._get(ctx, ctx.url(ctx.provider.token_url), params=params)
        tokens = self.token_set(ctx.provider, body) if "access_token" in body else short
        me = await self._get(ctx, ctx.url(ctx.provider.api_base_url).rstrip("/") + "/me", params={"fields": "id,name"}, token=tokens.access_token)
        metadata = {"user_id": str(me["id"])} if me.get("id") else {}
        if me.get("name"):
            metadata["user_name"] = me["name"]
        return attrs.evolve(tokens, scopes=tokens.scopes or short.scopes, metadata={**tokens.metadata, **metadata})

    async def _get(self, ctx, url: str, *, params: dict[str, str], token: str | None = None) -> dict:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            async with ctx.http.get(url, params=params, headers=headers, allow_redirects=False) as response:
                body = await response.json(content_type=None)
                status = response.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            raise ProviderAuthError(f"{ctx.provider.display_name}: {type(error).__name__}") from None
        if status >= 400 or not isinstance(body, dict) or "error" in body:
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message") if isinstance(error, dict) else f"HTTP {status}"
            code = "invalid_grant" if isinstance(error, dict) and error.get("code") == 190 else None
            raise ProviderAuthError(f"{ctx.provider.display_name}: {message}", error=code, status=status)
        return body
