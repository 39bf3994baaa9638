"""The multi-host fault harness: hosts made as network namespaces on this machine, each running
``patchbay serve`` or ``patchbay worker`` against one PostgreSQL (and Redis), killed and restarted.

Hosts hang off a bridge of their own (``10.203.N.0/24``, ``N`` from the test's pid), with the
machine's side of the bridge at ``.1``; all traffic stays on this machine. PostgreSQL and Redis
listen on loopback only, so forwarders on the bridge address carry their traffic. Where namespaces
cannot be made (not root, no ``ip``), every host is a loopback address (``127.0.N.x``) instead, and
the test says so in its figures.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

PATCHBAY = str(Path(sys.executable).with_name("patchbay"))
FORWARDER = str(Path(__file__).with_name("forward.py"))
SERVE_PORT = 8080


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Hosts:
    """``count`` hosts: their addresses, the gateway the machine answers on, and how to run a
    command on host ``i``."""

    def __init__(self, count: int) -> None:
        tag = os.getpid() % 250 + 1
        self.names = [f"pb{tag}h{i}" for i in range(count)]
        self.bridge = f"pbbr{tag}"
        self.isolated = False
        try:
            self._make_namespaces(tag)
            self.isolated = True
        except (OSError, subprocess.CalledProcessError):
            self.close()
            self.gateway = "127.0.0.1"
            self.addresses = [f"127.0.{tag}.{10 + i}" for i in range(count)]

    def _make_namespaces(self, tag: int) -> None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise OSError("network namespaces need root and iproute2")
        self.gateway = f"10.203.{tag}.1"
        self.addresses = []
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, name in enumerate(self.names):
            address = f"10.203.{tag}.{10 + index}"
            outside, inside = f"{name}a", f"{name}b"
            _ip("netns", "add", name)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", name)
            _ip("link", "set", outside, "master", self.bridge)
            _ip("link", "set", outside, "up")
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", inside)
            _ip("-n", name, "link", "set", inside, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            self.addresses.append(address)

    def command(self, index: int, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.names[index], *argv] if self.isolated else argv

    def close(self) -> None:
        for name in self.names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            subprocess.run(["ip", "link", "del", f"{name}a"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


class Node:
    """One ``patchbay serve`` or ``patchbay worker`` process on a host, restartable."""

    def __init__(self, hosts: Hosts, index: int, role: str, environ: dict[str, str], log_dir: Path) -> None:
        self.hosts, self.index, self.role, self.environ = hosts, index, role, environ
        self.address = hosts.addresses[index]
        self.url = f"http://{self.address}:{SERVE_PORT}"
        self.log = log_dir / f"{role}-{index}.log"
        self.process: subprocess.Popen | None = None
        self.kills = 0

    def start(self) -> None:
        argv = [PATCHBAY, self.role] + (["--host", self.address, "--port", str(SERVE_PORT)] if self.role == "serve" else [])
        with self.log.open("a") as log:
            self.process = subprocess.Popen(self.hosts.command(self.index, argv), env=self.environ, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 60) -> None:
        if self.role != "serve":
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{self.role} on {self.address} did not become ready: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
            self.kills += 1

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


@pytest.fixture
def hosts():
    made = Hosts(3)
    yield made
    made.close()


@pytest.fixture
def forwarders(hosts):
    """PostgreSQL and Redis reachable from the hosts at the gateway address."""
    started = []
    if hosts.isolated:
        for port in (5432, 6379):
            process = subprocess.Popen(
                [sys.executable, FORWARDER, hosts.gateway, str(port), "127.0.0.1", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            assert process.stdout is not None and process.stdout.readline().strip() == "forwarding"
            started.append(process)
    yield hosts.gateway
    for process in started:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def make_node(hosts):
    """``make_node(index, role, environ, log_dir)``: a :class:`Node` on host ``index``."""

    def make(index: int, role: str, environ: dict[str, str], log_dir: Path) -> Node:
        return Node(hosts, index, role, environ, log_dir)

    return make
