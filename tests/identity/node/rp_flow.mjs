// openid-client (a certified relying party) against a live `patchbay serve`: discovery, code flow
// with PKCE, ID token validation, userinfo, refresh, introspection, revocation and end-session.
import * as client from 'openid-client';
import { UserAgent } from './browserless.mjs';

const issuer = process.env.ISSUER;
const redirectUri = 'http://localhost:8765/cb';
const registration = await fetch(`${issuer}/api/v1/oidc/register`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ client_name: 'openid-client RP', redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'client_secret_basic', scope: 'openid profile email organization permissions offline_access' }),
}).then((r) => r.json());

const options = { execute: [client.allowInsecureRequests] };
const config = await client.discovery(new URL(issuer), registration.client_id, undefined, client.ClientSecretBasic(registration.client_secret), options);
const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const nonce = client.randomNonce();
const authorizationUrl = client.buildAuthorizationUrl(config, {
  redirect_uri: redirectUri, scope: 'openid profile email organization permissions offline_access', state, nonce,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
});
const agent = new UserAgent();
const callback = await agent.authorize(authorizationUrl, redirectUri, { email: process.env.EMAIL, password: process.env.PASSWORD });
const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
const claims = tokens.claims();
const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
await new Promise((resolve) => setTimeout(resolve, 1100));
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
const introspection = await client.tokenIntrospection(config, tokens.access_token);
await client.tokenRevocation(config, tokens.refresh_token);
let refreshAfterRevocation = 'succeeded';
try { await client.refreshTokenGrant(config, tokens.refresh_token); } catch (error) { refreshAfterRevocation = error.error || error.code || String(error); }
const endSessionUrl = client.buildEndSessionUrl(config, { id_token_hint: refreshed.id_token, post_logout_redirect_uri: 'http://localhost:8765/bye', state: 'bye-state' });
const logout = await agent.authorize(endSessionUrl, 'http://localhost:8765/bye', {});
const silent = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', state: 's2', prompt: 'none',
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
const afterLogout = await agent.authorize(silent, redirectUri, {});

console.log(JSON.stringify({
  issuer: config.serverMetadata().issuer,
  callbackIss: callback.searchParams.get('iss'),
  sub: claims.sub, email: claims.email, idTokenType: claims.token_type, audience: claims.aud,
  scope: tokens.scope, hasRefresh: Boolean(tokens.refresh_token),
  userinfo,
  refreshedSameToken: refreshed.refresh_token === tokens.refresh_token,
  refreshedIdTokenSub: refreshed.claims()?.sub,
  introspection,
  refreshAfterRevocation,
  logoutState: logout.searchParams.get('state'),
  afterLogoutError: afterLogout.searchParams.get('error'),
}));
