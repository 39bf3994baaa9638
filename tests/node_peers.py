"""The npm packages of a ``tests/*/node`` folder, installed on first use.

Several pytest workers (``pytest -n``) may ask for the same folder at once: the install runs under
an exclusive lock on the folder's ``package.json``, so one worker installs and the others wait and
then find the packages in place."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path

import pytest


def installed(folder: Path, missing_tools: str) -> Path:
    """``folder`` with every dependency of its ``package.json`` in ``node_modules``; skips with
    ``missing_tools`` when Node.js or npm is not installed, and with npm's error when the install
    fails."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip(missing_tools)
    manifest = folder / "package.json"
    needed = json.loads(manifest.read_text())["dependencies"]
    with manifest.open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not all((folder / "node_modules" / name / "package.json").exists() for name in needed):
            result = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                pytest.skip(f"npm install in {folder.parent.name}/{folder.name} failed: {result.stderr[-500:]}")
    return folder
