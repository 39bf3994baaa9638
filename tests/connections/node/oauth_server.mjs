// A real OAuth 2 authorization server (oauth2-mock-server) for the round-trip test. Prints its URL
// as the first JSON line, then one JSON line per token response ({grant, refreshToken}).
import { randomUUID } from 'node:crypto';
import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
// a unique id per token, so that a refreshed token differs from the one it replaces
server.service.on('beforeTokenSigning', (token) => { token.payload.jti = randomUUID(); });
server.service.on('beforeResponse', (response, req) => {
  process.stdout.write(JSON.stringify({ grant: req.body.grant_type, status: response.statusCode, hasRefresh: Boolean(response.body.refresh_token) }) + '\n');
});
await server.start(0, '127.0.0.1');
process.stdout.write(JSON.stringify({ url: server.issuer.url }) + '\n');
process.on('SIGTERM', async () => { await server.stop(); process.exit(0); });
