"""The TypeScript SDK's client (``@modelcontextprotocol/sdk`` from npm) lists the tools of
``/mcp`` and calls one."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.node_peers import installed

NODE_DIR = Path(__file__).parent / "node"

pytestmark = pytest.mark.both_databases


@pytest.fixture(scope="session")
def node_peers() -> Path:
    """tests/mcp/node's npm packages, installed on first use; skips without npm."""
    return installed(NODE_DIR, "Node.js and npm are needed for the TypeScript MCP client")


async def test_the_typescript_client_lists_and_calls(setup, node_peers, acme):
    env = {
        **os.environ,
        "MCP_URL": setup["url"],
        "MCP_TOKEN": setup["token"],
        "MCP_TOOL": "acme__create_item",
        "MCP_ARGUMENTS": json.dumps({"name": "from node"}),
    }
    process = await asyncio.create_subprocess_exec(
        shutil.which("node"), str(NODE_DIR / "list_and_call.mjs"), env=env, cwd=NODE_DIR, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["protocolVersion"] == "2025-11-25"
    assert set(answer["tools"]) == {"acme__create_item", "acme__get_item", "acme__proxy"}
    assert answer["isError"] is False and answer["structuredContent"] == {"id": "it_1", "name": "from node"}
