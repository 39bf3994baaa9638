"""docs/quickstart.md followed literally: its ```bash blocks run in order, in one bash process, in a
fresh folder, with the installed ``patchbay`` executable first on PATH. The blocks start
``patchbay serve`` and the stand-in provider themselves, as a reader does.

Two departures from the text, both mechanical:
- the block with ``pip install .`` is skipped: the test runs against the patchbay that is already
  installed (CI installs the clone with ``pip install .`` before running the tests);
- the ports 8080 and 9000 are replaced by free ones, so the test runs beside other servers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import blocks

pytestmark = pytest.mark.slow  # starts patchbay serve and runs the CLI in processes of their own

QUICKSTART = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
TIMEOUT_SECONDS = 240


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def quickstart_script(api_port: int, provider_port: int) -> str:
    """The quickstart's shell blocks as one script, the install skipped and the ports replaced."""
    shell = [block for block in blocks(QUICKSTART) if block.language in ("bash", "sh", "shell")]
    assert any("pip install ." in block.text for block in shell), "the quickstart starts with pip install ."
    kept = [block.text for block in shell if "pip install" not in block.text]
    for text in kept:
        assert "pip install" not in text
    script = "\n".join(kept)
    assert "8080" in script and "9000" in script
    return "set -e -o pipefail\n" + script.replace("8080", str(api_port)).replace("9000", str(provider_port))


def test_quickstart_runs_as_written(tmp_path):
    executable = Path(sys.executable).with_name("patchbay")
    assert executable.exists(), executable
    environ = {key: value for key, value in os.environ.items() if not key.startswith("PATCHBAY_")}
    environ["PATH"] = f"{executable.parent}{os.pathsep}{environ.get('PATH', '')}"
    api_port, provider_port = _free_port(), _free_port()
    process = subprocess.Popen(
        ["bash", "-c", quickstart_script(api_port, provider_port)],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_SECONDS)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever the script left running
        except ProcessLookupError:
            pass
    folder = tmp_path / "patchbay-quickstart"
    log = (folder / "patchbay.log").read_text() if (folder / "patchbay.log").exists() else ""
    assert process.returncode == 0, f"{output}\n--- patchbay.log ---\n{log[-4000:]}"

    seen = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    proxied = [request for request in seen if request["path"] == "/v1/balance"]
    assert proxied == [{"method": "GET", "path": "/v1/balance", "authorization": "Bearer sk_test_quickstart", "body": None}]
    forwarded = [json.loads(request["body"]) for request in seen if request["path"] == "/forwarded"]
    assert forwarded and forwarded[0]["event"] == "customer.created" and forwarded[0]["provider"] == "stripe"
    assert forwarded[0]["data"]["data"]["object"]["email"] == "ada@example.com"
    notified = [json.loads(request["body"]) for request in seen if request["path"] == "/flow"]
    assert notified == [{"text": "Hello, Ada!"}]
    assert '"message":"Hello, Ada!"' in output.replace(" ", "").replace("Hello,Ada!", "Hello, Ada!")
