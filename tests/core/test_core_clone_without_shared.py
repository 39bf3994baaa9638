"""A clone made anywhere but beside the development workspace's ``shared/`` folder (a user's clone,
CI's): the test that reads the interface specification skips, naming the missing file, instead of
failing with FileNotFoundError (the README's test command failed that way: 480 passed, 1 failed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a pytest process of its own over a copy of the tree

ROOT = Path(__file__).resolve().parents[2]


def test_the_spec_test_skips_with_the_reason_in_a_clone_without_shared(tmp_path):
    clone = tmp_path / "elsewhere" / "clone"
    (clone / "tests" / "core").mkdir(parents=True)
    for part in ("pyproject.toml", "tests/conftest.py", "tests/clock.py", "tests/core/test_core_openapi.py"):
        shutil.copy(ROOT / part, clone / part)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "tests/core/test_core_openapi.py::test_every_spec_route_is_served"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 skipped" in result.stdout and "the interface specification is not beside this clone" in result.stdout
