"""The TypeScript client generated from a running server's /openapi.json (sdks/generate:
openapi-typescript's types, openapi-fetch's requests, compiled by tsc) drives that server: the
documented example runs as written, and a check that only compiles when the answers are typed
(``@ts-expect-error`` on what the document does not allow: with untyped answers the directive
itself is an error) reads them. npm installs
sdks/typescript's dependencies on first use; skips without Node.js and npm."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.node_peers import installed
from tests.sdks.conftest import GENERATE_SECONDS, ROOT, generate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(GENERATE_SECONDS + 900)]  # npm, openapi-typescript and tsc, and a server process

PACKAGE = ROOT / "sdks" / "typescript"


@pytest.fixture(scope="module")
def client_folder(live, tmp_path_factory) -> Path:
    modules = installed(PACKAGE, "the TypeScript SDK test needs Node.js and npm") / "node_modules"
    out = tmp_path_factory.mktemp("typescript-sdk")
    generate("--document", f"{live.url}/openapi.json", "--out", str(out), "--node-modules", str(modules), "--no-build", "typescript")
    folder = out / "typescript"
    shutil.copyfile(Path(__file__).with_name("typescript_check.ts"), folder / "examples" / "check.ts")
    result = subprocess.run([str(folder / "node_modules" / ".bin" / "tsc"), "-p", "."], cwd=folder, capture_output=True, text=True, timeout=GENERATE_SECONDS)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


def _node(live, api_key, folder: Path, script: str) -> dict:
    env = {**live.env, "PATCHBAY_URL": live.url, "PATCHBAY_API_KEY": api_key}
    result = subprocess.run(["node", f"dist/examples/{script}"], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_example_runs_as_written(live, api_key, client_folder):
    printed = _node(live, api_key, client_folder, "tables.js")
    assert printed == {"slug": printed["slug"], "columns": ["email", "plan"], "total": 1, "first": {"email": "ada@example.com", "plan": "pro"}}


def test_typed_answers(live, api_key, client_folder):
    assert _node(live, api_key, client_folder, "check.js") == {"slug": "typed-in-typescript", "provider": "github", "duplicate": [409, 409], "anonymous": 401}
