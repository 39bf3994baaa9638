"""The generic OpenID Connect federated login (the ``idp`` hint's default protocol, ``oidc``).

Configured per upstream provider in ``[federation.<name>]``: ``issuer`` (or ``discovery_url``),
``client_id``, ``client_secret`` and optionally ``scope`` (default ``openid email profile``). The
upstream flow uses the authorization code grant with PKCE S256, its own state and nonce; the ID token
is verified against the upstream JWKS (signature, ``iss``, ``aud``, ``exp``, ``nonce``)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from patchbay import hookimpl

DISCOVERY_TTL = 300


class OidcFederation:
    """The federated-login protocol object: the core hands it the provider's table and the shared
    HTTP session, never storage."""

    def __init__(self) -> None:
        self._metadata: dict[str, tuple[float, dict[str, Any]]] = {}

    async def _discover(self, config: dict[str, Any], http) -> dict[str, Any]:
        url = config.get("discovery_url") or config["issuer"].rstrip("/") + "/.well-known/openid-configuration"
        cached = self._metadata.get(url)
        if cached and time.monotonic() - cached[0] < DISCOVERY_TTL:
            return cached[1]
        async with http.get(url) as response:
            response.raise_for_status()
            metadata = await response.json(content_type=None)
        self._metadata[url] = (time.monotonic(), metadata)
        return metadata

    async def authorization_url(self, *, config: dict[str, Any], http, redirect_uri: str, state: str, nonce: str, code_challenge: str) -> str:
        metadata = await self._discover(config, http)
        query = {
            "response_type": "code",
            "client_id": config["client_id"],
            "redirect_uri": redirect_uri,
            "scope": config.get("scope", "openid email profile"),
            "state": state,
            "nonce": nonce,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
        }
        endpoint = metadata["authorization_endpoint"]
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)

    async def complete(self, *, config: dict[str, Any], http, redirect_uri: str, code: str, code_verifier: str, nonce: str) -> dict[str, Any]:
        """Exchange the code and return the verified claims of the upstream ID token."""
        from joserfc import jwt
        from joserfc.jwk import KeySet

        metadata = await self._discover(config, http)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
            "client_id": config["client_id"],
            "client_secret": config.get("client_secret", ""),
        }
        async with http.post(metadata["token_endpoint"], data=form, headers={"Accept": "application/json"}) as response:
            tokens = await response.json(content_type=None)
            if response.status != 200 or "id_token" not in tokens:
                raise ValueError(f"token endpoint answered {response.status}: {tokens.get('error', 'no id_token')}")
        async with http.get(metadata["jwks_uri"]) as response:
            response.raise_for_status()
            keys = KeySet.import_key_set(await response.json(content_type=None))
        token = jwt.decode(tokens["id_token"], keys, algorithms=["RS256", "ES256", "PS256"])
        claims = dict(token.claims)
        issuer = metadata.get("issuer", config.get("issuer"))
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if claims.get("iss") != issuer:
            raise ValueError("ID token issuer does not match")
        if config["client_id"] not in audiences:
            raise ValueError("ID token audience does not match")
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] < time.time() - 60:
            raise ValueError("ID token expired")
        if claims.get("nonce") != nonce:
            raise ValueError("ID token nonce does not match")
        if not claims.get("sub"):
            raise ValueError("ID token has no sub")
        return claims


@hookimpl
def register_federated_login(register):
    register("oidc", OidcFederation())
