"""The OAuth 2.0 / OpenID Connect identity provider (spec part B).

authlib supplies the protocol logic (grants, PKCE, registration, introspection, revocation); this
package holds the models, the services around them, the thin aiohttp adapter and the pages.
"""
