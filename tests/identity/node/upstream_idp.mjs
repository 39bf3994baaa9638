// A real upstream OpenID provider for the federation test (oauth2-mock-server): it approves every
// authorization at once and signs RS256 ID tokens carrying the request's nonce. Prints its issuer,
// then runs until killed.
import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
server.service.on('beforeTokenSigning', (token) => {
  token.payload.email = 'federated@example.com';
  token.payload.email_verified = true;
  token.payload.name = 'Fede Rated';
});
await server.start(0, '127.0.0.1');
console.log(JSON.stringify({ issuer: server.issuer.url }));
