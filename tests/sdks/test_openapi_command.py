"""``patchbay openapi`` writes, without a server or a database, the document a running server
answers at /openapi.json (the SDKs are generated from either)."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

from tests.sdks.conftest import PATCHBAY, ROOT


@pytest.mark.slow  # a server process, and the CLI building the whole application
def test_the_offline_document_is_the_served_one(live, tmp_path):
    with urllib.request.urlopen(f"{live.url}/openapi.json", timeout=60) as response:
        served = json.load(response)
    env = {key: value for key, value in live.env.items() if key not in ("PATCHBAY_DATA_DIR", "PATCHBAY_SECRET_KEY", "PATCHBAY_PORT")}
    folder = tmp_path / "scratch"
    folder.mkdir()
    target = tmp_path / "openapi.json"
    written = subprocess.run([PATCHBAY, "openapi", "--base-url", live.url, "-o", str(target)], env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert written.returncode == 0 and written.stderr == f"wrote {target}\n", written.stderr
    assert json.loads(target.read_text()) == served
    # nothing is created where it runs: no data folder, no generated secret
    assert list(folder.iterdir()) == []


def test_the_guide_shows_the_examples_as_they_run():
    """docs/sdks.md quotes the two example files whole, so what the guide shows is what the SDK
    tests run."""
    guide = (ROOT / "docs" / "sdks.md").read_text()
    for example in (ROOT / "sdks" / "python" / "example.py", ROOT / "sdks" / "typescript" / "examples" / "tables.ts"):
        assert example.read_text().rstrip() in guide, example
