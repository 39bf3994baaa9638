// Lists the tools of MCP_URL with MCP_TOKEN and calls MCP_TOOL with MCP_ARGUMENTS (JSON), using
// the official TypeScript SDK's Streamable HTTP client; prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
const client = new Client({ name: "patchbay-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: process.env.MCP_TOOL, arguments: JSON.parse(process.env.MCP_ARGUMENTS) });
console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion ?? null,
  tools: tools.map((tool) => tool.name),
  isError: result.isError ?? false,
  structuredContent: result.structuredContent ?? null,
}));
await client.close();
