"""Reliability at the edges: the proxy audit buffer during a database outage, and clean stops of
``patchbay serve`` and ``patchbay worker`` on SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchbay.core.connections.runtime import CALL_FIELDS, AuditBuffer
from patchbay.core.storage.db import Database


def _row(n: int) -> dict:
    return {"workspace_id": "ws", "connection_id": "c", "provider": "p", "source": "proxy", "method": "GET", "path": f"/{n}", "status": 200, "duration_ms": 1.0}


async def test_the_audit_buffer_stays_bounded_and_says_so_while_the_database_is_down(tmp_path, caplog):
    down = Database(f"sqlite+aiosqlite:///{tmp_path}/no-such-folder/patchbay.db")  # cannot be opened
    buffer = AuditBuffer(down, max_pending=50)
    try:
        for n in range(120):
            buffer.add(**_row(n))
        with pytest.raises(Exception):  # noqa: B017 - the database error of the broken insert
            await buffer.flush()
        for n in range(120, 130):
            buffer.add(**_row(n))
        assert len(buffer._rows) == 50 and buffer.dropped == 80
        assert buffer._rows[-1][CALL_FIELDS.index("path")] == "/129"  # the newest rows are kept
        assert any(r.levelno == logging.WARNING and "dropped" in r.getMessage() for r in caplog.records)
    finally:
        await buffer.close()
        await down.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(command: list[str], tmp_path, ready: str, **env: str) -> subprocess.Popen:
    environ = {
        **os.environ,
        "PATCHBAY_SECRET_KEY": "test-secret-key-0123456789",
        "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
        "PATCHBAY_SCHEDULER": "false",
        **env,
    }
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "patchbay"), *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ
    )
    deadline = time.monotonic() + 120
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if ready in line:
            return process
    process.kill()
    raise AssertionError("did not start: " + "".join(seen[-20:]))


def _stop(process: subprocess.Popen) -> float:
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"still running {STOP_BOUND}s after SIGTERM") from None
    return time.monotonic() - began


STOP_BOUND = 30.0


def _connect(port: int) -> socket.socket:
    """The server announces itself just before it binds: try for a while."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.slow  # a process of its own
def test_serve_stops_cleanly_on_sigterm(tmp_path):
    port = _free_port()
    process = _start(["serve"], tmp_path, "listening", PATCHBAY_PORT=str(port), PATCHBAY_HOST="127.0.0.1")
    with _connect(port) as connection:  # a request answered just before the stop
        connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    seconds = _stop(process)
    assert process.returncode == 0
    print(f"patchbay serve stopped {seconds:.2f}s after SIGTERM")


@pytest.mark.slow  # a process of its own
def test_worker_stops_cleanly_on_sigterm(tmp_path):
    process = _start(["worker"], tmp_path, "worker running", PATCHBAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/pb.db")
    seconds = _stop(process)
    assert process.returncode == 0
    print(f"patchbay worker stopped {seconds:.2f}s after SIGTERM")
