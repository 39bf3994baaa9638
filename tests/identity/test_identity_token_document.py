"""The token endpoint's real answers are what /openapi.json declares (``TokenResponse``, and the
``{error, error_description}`` of OAuth for a refusal): the code exchange with a refresh and an ID
token, client_credentials with neither, and a refused client."""

from __future__ import annotations

from tests.core.openapi_answers import assert_documented

TOKEN = "/api/v1/oidc/token"


async def test_issued_tokens_and_refusals_match_the_document(idp):
    document = await (await idp.http.get("/openapi.json")).json()
    client = await idp.register()
    code, verifier = await idp.code_for(client, scope="openid email offline_access")
    exchanged = await idp.token(client, grant_type="authorization_code", code=code, redirect_uri=idp.redirect, code_verifier=verifier)
    assert exchanged.status == 200
    await assert_documented(document, "POST", TOKEN, exchanged)
    assert {"refresh_token", "id_token"} <= set(await exchanged.json())
    service = await idp.register(grant_types=["client_credentials"], scope="openid")
    issued = await idp.token(service, grant_type="client_credentials")
    assert issued.status == 200
    await assert_documented(document, "POST", TOKEN, issued)
    assert not {"refresh_token", "id_token"} & set(await issued.json())
    refused = await idp.token({**service, "client_secret": "wrong"}, grant_type="client_credentials")
    assert refused.status == 401
    declared = await assert_documented(document, "POST", TOKEN, refused)
    assert declared["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/OAuthError"}
