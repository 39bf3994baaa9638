// node-oidc-provider issuing RS256 JWT access tokens for client_credentials: the benchmark's peer.
// Usage: PORT=... node oidc_provider_bench.mjs ; prints {"issuer"} when listening.
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };
const provider = new Provider(issuer, {
  clients: [{ client_id: 'bench', client_secret: 'bench-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [],
    token_endpoint_auth_method: 'client_secret_post' }],
  jwks: { keys: [jwk] },
  scopes: ['api'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:bench:api',
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'api', audience: 'urn:bench:api', accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg: 'RS256' } } }),
    },
  },
});
provider.listen(port, '127.0.0.1', () => console.log(JSON.stringify({ issuer })));
