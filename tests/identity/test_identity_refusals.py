"""Access tokens of our identity provider refused by the connect API and the platform API say why,
over HTTP: a third-party app's token, a revoked grant, a deleted client, a user's token on the
platform API, half a client credential (``core.security.refusals``)."""

from sqlalchemy import delete, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.identity.models import Grant, OidcClient
from patchbay.core.timeutil import utcnow

CONNECT = "send a workspace API key as `x-api-key: <key>`, or an access token of this deployment's identity provider as `Authorization: Bearer <token>`"
PLATFORM = "send a platform client's `x-client-id` and `x-client-secret` headers, or its client_credentials access token as `Authorization: Bearer <token>`"
SCOPE = "openid organization permissions"


async def refusal(idp, path, headers):
    response = await idp.http.get(path, headers=headers)
    body = await response.json()
    assert response.status == 401, body
    return body["message"]


async def test_third_party_apps_token_is_named_on_the_connect_api(idp):
    app = await idp.register()
    tokens = await idp.tokens(app, scope=SCOPE)
    text = await refusal(idp, "/connect/v1/providers", {"Authorization": f"Bearer {tokens['access_token']}"})
    assert text == (
        f"Unauthorized: the access token was issued to a third-party app (client `{app['client_id']}`): a user's token opens the connect API "
        "only when its app is one of the operator's own (`patchbay clients create --first-party`); a third-party app gets the user's "
        f"identity, not their workspaces; {CONNECT}"
    )


async def test_revoked_grant_and_deleted_client_are_named(idp):
    app = await idp.operator_client()
    first = await idp.tokens(app, scope=SCOPE)
    second = await idp.tokens(app, scope=SCOPE)
    services = idp.app[SERVICES]
    async with services.db.transaction() as session:
        await session.execute(update(Grant).where(Grant.client_id == app["client_id"]).values(revoked_at=utcnow()))
    text = await refusal(idp, "/connect/v1/providers", {"Authorization": f"Bearer {first['access_token']}"})
    assert text == f"Unauthorized: the user's grant to the app `{app['client_id']}` that this token came from was revoked: sign in again; {CONNECT}"
    async with services.db.transaction() as session:
        await session.execute(delete(OidcClient).where(OidcClient.client_id == app["client_id"]))
    text = await refusal(idp, "/connect/v1/providers", {"Authorization": f"Bearer {second['access_token']}"})
    assert text == f"Unauthorized: the app the access token was issued to (client `{app['client_id']}`) no longer exists; {CONNECT}"


async def test_platform_api_refusals_say_what_it_takes(idp):
    assert await refusal(idp, "/api/v1/organizations", {}) == f"Unauthorized: no credential was sent; {PLATFORM}"
    half = await refusal(idp, "/api/v1/organizations", {"x-client-id": "someone"})
    assert half == f"Unauthorized: `x-client-id` and `x-client-secret` go together, and one of them is missing; {PLATFORM}"
    key = await refusal(idp, "/api/v1/organizations", idp.workspace["headers"])
    assert key == f"Unauthorized: a workspace API key opens the connect API, not the platform API; {PLATFORM}"
    user_tokens = await idp.tokens(await idp.register(), scope=SCOPE)
    text = await refusal(idp, "/api/v1/organizations", {"Authorization": f"Bearer {user_tokens['access_token']}"})
    assert text == (
        "Unauthorized: this is a user's access token (from a sign-in); the platform API is for app backends and takes their own "
        f"client_credentials token (a signed-in user's own calls use the browser session); {PLATFORM}"
    )


async def test_client_credentials_of_a_client_without_platform_trust_is_forbidden_naming_the_command(idp):
    app = await idp.operator_client(trust="third_party", grant_types=["client_credentials"])
    token = (await (await idp.token(app, grant_type="client_credentials")).json())["access_token"]
    response = await idp.http.get("/api/v1/organizations", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 403
    assert (await response.json())["message"] == (
        f"This client ({app['client_id']}) is not trusted with the platform API: an operator creates platform clients with "
        "`patchbay clients create --platform`; a self-registered app never is one"
    )
