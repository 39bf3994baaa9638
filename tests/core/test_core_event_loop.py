"""The event loop of ``patchbay serve`` and ``patchbay worker`` (``event_loop``): uvloop when it is
installed, asyncio's when asked or when uvloop is missing, in every forked process too; a bad or
unusable choice is one line at start."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.serve_process import PATCHBAY, ServeProcess

pytestmark = pytest.mark.slow  # patchbay serve processes of their own


def _served(tmp_path: Path, *, config: str | None = None, **env: str) -> str:
    """The output of a ``patchbay serve`` that answered ``/health`` with 200, once stopped (its
    standard output is written out as it exits)."""
    server = ServeProcess(tmp_path / "data", env, config=config)
    try:
        server.wait_ready()
    finally:
        server.stop()
    return server.log.read_text()


def _announced_loop(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("  event loop:")]
    return line.split(":", 1)[1].strip()


def _without_uvloop(tmp_path: Path) -> str:
    """A PYTHONPATH on which ``import uvloop`` fails, as on a platform it is not installed on."""
    shadow = tmp_path / "no-uvloop"
    (shadow / "uvloop").mkdir(parents=True)
    (shadow / "uvloop" / "__init__.py").write_text('raise ImportError("uvloop is not installed here")\n')
    return str(shadow)


def test_serve_runs_on_uvloop_by_default(tmp_path):
    assert _announced_loop(_served(tmp_path)) == "uvloop"


def test_serve_runs_on_asyncio_when_the_settings_file_says_so(tmp_path):
    assert _announced_loop(_served(tmp_path, config='event_loop = "asyncio"\n')) == "asyncio"


def test_auto_falls_back_to_asyncio_without_uvloop(tmp_path):
    assert _announced_loop(_served(tmp_path, PYTHONPATH=_without_uvloop(tmp_path))) == "asyncio"


def test_each_forked_process_serves_on_uvloop(tmp_path):
    server = ServeProcess(tmp_path / "data", {"PATCHBAY_PROCESSES": "2", "PATCHBAY_LOG_LEVEL": "INFO"})
    try:
        server.wait_ready()
        deadline = time.monotonic() + 30  # the second process starts once the first serves; logs go out in batches
        while len(loops := dict(re.findall(r"\[process (\d) pid \d+\] patchbay\.cli\.main serving on the (\w+) event loop", server.log.read_text()))) < 2:
            assert time.monotonic() < deadline, server.log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        server.stop()
    assert loops == {"0": "uvloop", "1": "uvloop"}
    assert _announced_loop(server.log.read_text()) == "uvloop"


def _start_failure(tmp_path: Path, **env: str) -> str:
    """The one line a ``patchbay serve`` that does not start ends with."""
    server = ServeProcess(tmp_path / "data", env)
    try:
        assert server.process.wait(timeout=120) == 1
    finally:
        server.stop()
    output = server.log.read_text()
    assert "Traceback" not in output
    return output.strip().splitlines()[-1]


def test_a_bad_event_loop_is_one_line(tmp_path):
    assert _start_failure(tmp_path, PATCHBAY_EVENT_LOOP="tokio") == (
        "Error: invalid setting: PATCHBAY_EVENT_LOOP: 'tokio' is not valid (input should be 'auto', 'uvloop' or 'asyncio')"
    )


def test_uvloop_chosen_but_not_installed_is_one_line(tmp_path):
    assert _start_failure(tmp_path, PATCHBAY_EVENT_LOOP="uvloop", PYTHONPATH=_without_uvloop(tmp_path)) == (
        "Error: event_loop (PATCHBAY_EVENT_LOOP): uvloop is chosen but not installed (it has no Windows build); choose auto or asyncio"
    )


@pytest.mark.parametrize(("setting", "loop"), [("auto", "uvloop"), ("asyncio", "asyncio")])
def test_the_worker_runs_on_the_chosen_loop(tmp_path, setting, loop):
    environ = {
        **{name: value for name, value in os.environ.items() if not name.startswith("PATCHBAY_")},
        "PATCHBAY_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/patchbay.db",
        "PATCHBAY_SECRET_KEY": "event-loop-secret",
        "PATCHBAY_LOG_LEVEL": "INFO",
        "PATCHBAY_EVENT_LOOP": setting,
    }
    process = subprocess.Popen([PATCHBAY, "worker"], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "patchbay worker running"
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert f"running on the {loop} event loop" in errors
