"""Every operation of /openapi.json fuzzed by schemathesis (all phases, rate limits off) against the
app on a real port: no input may produce a 5xx (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from patchbay.core.settings import RATE_LIMIT_DEFAULTS
from patchbay.core.testing import create_workspace_with_key

#: the hard limit of the run on two loaded cores (it is given schemathesis_seconds)
BUDGET_SECONDS = 170
MAX_EXAMPLES = "5"  # fuzzed examples per operation; the coverage phase adds its boundary cases


@pytest.fixture
def schemathesis_seconds() -> int:
    """Every operation and the stateful phase: more time than an area's conformance run (tests/contract/conftest.py)."""
    return 30


@pytest.mark.timeout(BUDGET_SECONDS + 60)
async def test_no_input_produces_a_server_error(make_app, schemathesis, tmp_path: Path):
    app = make_app(rate_limits={name: "off" for name in RATE_LIMIT_DEFAULTS})
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        ws = await create_workspace_with_key(app, plan="enterprise")
        code, text = await schemathesis(
            BUDGET_SECONDS,
            str(server.make_url("/openapi.json")),
            "--checks",
            "not_a_server_error",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            MAX_EXAMPLES,
            "--generation-deterministic",
            "--workers",
            "1",  # CPython 3.11.7's ast is not thread-safe (gh-106905): two workers crash schemathesis
            "--request-timeout",
            "30",
            "--suppress-health-check",
            "all",
            "--header",
            f"x-api-key: {ws['api_key']}",
            "--report",
            "ndjson",
            "--report-dir",
            str(tmp_path),
            cwd=tmp_path,
        )
        assert code == 0, text[-20_000:]
        assert "Fuzzing" in text and "Coverage" in text  # the phases ran
    finally:
        await server.close()
