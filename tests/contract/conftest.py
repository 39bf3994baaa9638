"""A live connect API for the contract tests: the app on a real port (aiohttp's TestServer) with an
enterprise workspace and its API key, rate limits off, and an API-key provider whose API is a local
fake (``contract_api``), so that connecting, proxying and actions never leave the machine; and the
conformance run every area's test makes against it (``conformance``)."""

from __future__ import annotations

import asyncio
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from patchbay import Provider, hookimpl
from patchbay.core.settings import RATE_LIMIT_DEFAULTS
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing.fakes import FakeProviderAPI
from tests.contract.conformance import Operations, schemathesis_toml

PROVIDER = "contract_api"


class ContractPack:
    """One API-key provider whose API is ``base``."""

    def __init__(self, base: str) -> None:
        self.base = base

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name=PROVIDER,
                display_name="Contract API",
                category="crm",
                auth_mode="api_key",
                api_base_url=self.base,
                credential_headers={"Authorization": "Bearer {api_key}"},
                health_check="GET /me",
                capabilities=("proxy",),
            )
        ]


@dataclass
class LiveApi:
    server: TestServer
    fake: FakeProviderAPI
    workspace: dict[str, Any]
    provider: str = PROVIDER

    @property
    def base_url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    @property
    def headers(self) -> dict[str, str]:
        return self.workspace["headers"]

    async def call(self, method: str, path: str, *, expect: int, **kwargs: Any) -> Any:
        """One request with the workspace's key; the answer's JSON."""
        async with aiohttp.ClientSession(headers=self.headers) as http, http.request(method, self.base_url + path, **kwargs) as response:
            assert response.status == expect, await response.text()
            return await response.json()


@pytest.fixture
async def live_api(make_app, database_url):
    """The app on SQLite and on PostgreSQL, listening on a free port."""
    fake = await FakeProviderAPI().start()
    app = make_app(plugins=[ContractPack(fake.url)], database_url=database_url, rate_limits={name: "off" for name in RATE_LIMIT_DEFAULTS})
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield LiveApi(server, fake, await create_workspace_with_key(app, plan="enterprise"))
    finally:
        await server.close()
        await fake.close()


@pytest.fixture
def schemathesis_seconds() -> int:
    """The time a schemathesis run is given (``--max-time``): its phases share it, and fuzzing
    repeats until it is spent. The runs of the suite add up to about a minute (docs/testing.md); a
    module overrides this fixture to give its run more."""
    return 8


@pytest.fixture
def schemathesis(schemathesis_seconds):
    """``await schemathesis(budget, *arguments, cwd=folder)`` runs ``schemathesis run`` for
    ``schemathesis_seconds`` and answers ``(exit code, output)``; running past ``budget`` seconds
    (a loaded machine's margin) fails the test."""
    executable = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert executable, "schemathesis is a test dependency (pip install -e '.[test]')"

    async def run(budget: float, *arguments: str, cwd: Path, seconds: float | None = None) -> tuple[int, str]:
        arguments = (*arguments, "--max-time", str(seconds or schemathesis_seconds))
        process = await asyncio.create_subprocess_exec(executable, "run", *arguments, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=cwd)
        try:
            output, _ = await asyncio.wait_for(process.communicate(), budget)
        except TimeoutError:
            process.kill()
            await process.wait()
            pytest.fail(f"schemathesis ran past its budget of {budget}s")
        return process.returncode or 0, output.decode(errors="replace")

    return run


@pytest.fixture
def conformance(live_api, schemathesis, schemathesis_seconds, tmp_path: Path):
    """``await conformance(paths, parameters, operations, budget=, max_examples=)`` runs
    schemathesis' positive phases (examples, coverage, fuzzing) with ``not_a_server_error`` and
    ``response_schema_conformance`` over the operations whose path matches the regex ``paths``, with
    the workspace's API key and the parameters of :func:`schemathesis_toml`; fails the test unless
    every check passed and the phases ran; answers schemathesis' output. One worker: with two,
    CPython 3.11.7's ``ast`` (not thread-safe, gh-106905) crashes schemathesis now and then."""

    async def run(paths: str, parameters: dict[str, str], operations: list[Operations], *, budget: float, max_examples: int) -> str:
        (tmp_path / "schemathesis.toml").write_text(schemathesis_toml(parameters, operations))
        code, text = await once(paths, budget / 3, max_examples, None)
        if "Time limit reached" in text:  # a loaded machine spent the time making cases: once more, with three times as long
            code, text = await once(paths, budget * 2 / 3, max_examples, schemathesis_seconds * 3)
        assert code == 0, text[-20_000:]
        assert "Coverage" in text and "Fuzzing" in text, text[-5_000:]  # the phases ran
        return text

    async def once(paths: str, budget: float, max_examples: int, seconds: float | None) -> tuple[int, str]:
        return await schemathesis(
            budget,
            f"{live_api.base_url}/openapi.json",
            "--checks",
            "not_a_server_error,response_schema_conformance",
            "--mode",
            "positive",
            "--phases",
            "examples,coverage,fuzzing",
            "--include-path-regex",
            paths,
            "--max-examples",
            str(max_examples),
            "--generation-deterministic",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--suppress-health-check",
            "all",
            "--header",
            f"x-api-key: {live_api.workspace['api_key']}",
            cwd=tmp_path,
            seconds=seconds,
        )

    return run
