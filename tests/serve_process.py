"""``patchbay serve`` in a subprocess, for the tests that need a whole server: on a free port, with
the settings the suite's servers share (no job workers, no scheduler, local targets allowed), its
output in a log file, ready once ``/health`` answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PATCHBAY = str(Path(sys.executable).with_name("patchbay"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServeProcess:
    """``patchbay serve`` with its data in ``data_dir``; ``env`` adds to or overrides the shared
    settings (the database is the one in ``data_dir`` unless ``PATCHBAY_DATABASE_URL`` is given);
    ``config`` is written to a settings file the server reads."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, *, config: str | None = None, log: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **{name: value for name, value in os.environ.items() if name not in ("PATCHBAY_CONFIG", "PATCHBAY_DATABASE_URL")},
            "PATCHBAY_DATA_DIR": str(data_dir),
            "PATCHBAY_PORT": str(self.port),
            "PATCHBAY_BASE_URL": self.url,
            "PATCHBAY_WORKERS": "0",
            "PATCHBAY_SCHEDULER": "false",
            "PATCHBAY_LOG_LEVEL": "WARNING",
            "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
            **(env or {}),
        }
        if config:
            path = data_dir / "patchbay.toml"
            path.write_text(config)
            self.env["PATCHBAY_CONFIG"] = str(path)
        self.log = log or data_dir / "serve.log"
        self.process = subprocess.Popen([PATCHBAY, "serve"], env=self.env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 60) -> None:
        """Until ``/health`` answers 200; stops the server and raises with its log's end otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"patchbay serve did not start: {self.log.read_text()[-2000:]}")

    def cli(self, *args: str) -> dict:
        """A ``patchbay`` command against this server's settings, its ``--json`` answer."""
        result = subprocess.run([PATCHBAY, *args, "--json"], env=self.env, capture_output=True, text=True, check=True)
        return json.loads(result.stdout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
