"""The agents' settings: each has its environment variable, and each is in the settings table of
docs/agents.md under both names."""

from __future__ import annotations

from pathlib import Path

from patchbay.core.settings import IdentitySettings, McpSettings, load_settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_the_environment_sets_the_mcp_settings_and_trusted_agents():
    settings = load_settings(
        environ={
            "PATCHBAY_MCP_MAX_LISTED_TOOLS": "12",
            "PATCHBAY_MCP_TOOL_CALLS_PER_TOKEN": "5/minute",
            "PATCHBAY_MCP_TOOL_CALLS_PER_CONNECTION": "off",
            "PATCHBAY_MCP_APPROVAL_TIMEOUT_SECONDS": "30",
            "PATCHBAY_MCP_AGENT_SESSION_TTL_SECONDS": "60",
            "PATCHBAY_MCP_MAX_AGENT_SESSION_TTL_SECONDS": "120",
            "PATCHBAY_IDENTITY_TRUSTED_AGENTS": "claude.ai, https://cursor.com/oauth/client.json",
        }
    )
    assert settings.mcp == McpSettings(
        max_listed_tools=12,
        tool_calls_per_token="5/minute",
        tool_calls_per_connection="off",
        approval_timeout_seconds=30,
        agent_session_ttl_seconds=60,
        max_agent_session_ttl_seconds=120,
    )
    assert settings.identity.trusted_agents == ["claude.ai", "https://cursor.com/oauth/client.json"]


def test_every_agent_setting_is_in_the_docs_table_with_its_variable():
    text = DOC.read_text()
    keys = [("mcp", name) for name in McpSettings.model_fields] + [("identity", "trusted_agents")]
    assert "trusted_agents" in IdentitySettings.model_fields
    missing = [f"[{section}] {name}" for section, name in keys if f"| `[{section}] {name}` / `PATCHBAY_{section.upper()}_{name.upper()}` |" not in text]
    assert not missing, missing
