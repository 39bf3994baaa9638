// The TypeScript SDK's own OAuth client provider against /mcp: discovery (the 401's
// resource_metadata), dynamic registration, PKCE and `resource`, driven by the SDK. The browser step
// is the Python test's: this script prints the authorization URL as one JSON line and reads the
// callback URL the test's signed-in user was sent to from stdin. Then it lists the tools and calls
// MCP_CALLS (a JSON list of [name, arguments]), spoils its access token so that the next request is
// refused and the SDK refreshes, and calls again. Prints one JSON line with what it saw.
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const url = new URL(process.env.MCP_URL);
const callback = process.env.MCP_CALLBACK;
const calls = JSON.parse(process.env.MCP_CALLS);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const seen = { refreshTokens: [] };
let tokens, clientInformation, verifier;

const provider = {
  get redirectUrl() { return callback; },
  get clientMetadata() {
    return {
      client_name: "TypeScript agent",
      redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation() { return clientInformation; },
  saveClientInformation(info) { clientInformation = info; },
  tokens() { return tokens; },
  saveTokens(saved) { tokens = saved; seen.refreshTokens.push(saved.refresh_token); },
  redirectToAuthorization(authorizationUrl) { console.log(JSON.stringify({ authorize: authorizationUrl.toString() })); },
  saveCodeVerifier(saved) { verifier = saved; },
  codeVerifier() { return verifier; },
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: "patchbay-ts-oauth-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const { value } = await lines.next();
    await transport.finishAuth(new URL(value).searchParams.get("code"));
    return connect();
  }
}

async function round(client) {
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  const results = [];
  for (const [name, args] of calls) {
    const result = await client.callTool({ name, arguments: args });
    results.push({ isError: Boolean(result.isError), structuredContent: result.structuredContent ?? null, text: result.content?.[0]?.text ?? "" });
  }
  return { tools, results };
}

const client = await connect();
seen.first = await round(client);
seen.registeredClientId = clientInformation.client_id;
tokens = { ...tokens, access_token: "spoiled" }; // refused next: the SDK refreshes with the refresh token
seen.second = await round(client);
await client.close();
console.log(JSON.stringify(seen));
process.exit(0);
