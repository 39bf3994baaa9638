"""The MCP server: ``/mcp`` (Streamable HTTP) over each workspace's connections, actions, flows and
tables, for agents holding a grant (issue 27)."""
