"""Several processes of ``patchbay serve`` on one port, and the parent that keeps them running.

The parent binds the listening sockets once, builds the application once (without starting it),
then forks the children, which start their copy of it on the sockets they inherited. It accepts no
connection itself: it restarts a child that dies (with a growing delay while it keeps dying), and
on SIGTERM or SIGINT stops them all.

On Linux each child gets a socket of its own, all bound to the one address with ``SO_REUSEPORT``,
so that the kernel spreads new connections evenly over the children (with one shared socket, the
child that wakes first takes a whole burst of them). The parent keeps every socket open for as long
as it runs: connections waiting in a dead child's queue stay queued and are accepted by its
replacement instead of being refused. Elsewhere the children share one socket.

A child dies with its parent (``PR_SET_PDEATHSIG`` on Linux; a child also checks its parent is
still there): a ``kill -9`` of the parent stops the whole server, as it stopped the one process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable

import attrs

log = logging.getLogger(__name__)

#: the default number of processes is the number of cores this process may run on, at most this
MAX_DEFAULT_PROCESSES = 8
#: the first restart of a dead child waits this long, doubling while it keeps dying young
RESTART_DELAY_SECONDS = 0.5
RESTART_DELAY_CAP_SECONDS = 10.0
#: a child that ran this long before it died is restarted after the first delay again
HEALTHY_SECONDS = 30.0
#: how long a taken port is tried again at start (a previous server's children may still be exiting)
BIND_RETRY_SECONDS = 2.0
BACKLOG = 128


def default_processes() -> int:
    """One per core this process may run on, at most ``MAX_DEFAULT_PROCESSES``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_PROCESSES))


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def _reuse_port() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


# ---------------------------------------------------------------------------------------------
# Sockets
# ---------------------------------------------------------------------------------------------


def _addresses(host: str, port: int) -> list[tuple[int, tuple]]:
    seen: list[tuple[int, tuple]] = []
    for family, _type, _proto, _name, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
        if (family, address[:2]) not in [(f, a[:2]) for f, a in seen]:
            seen.append((family, address))
    return seen


def _bind(family: int, address: tuple, *, reuse_port: bool, several: bool) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6 and several:  # as asyncio does when one host name has both families
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
        return sock
    except BaseException:
        sock.close()
        raise


def listening_sockets(host: str, port: int, count: int) -> list[list[socket.socket]]:
    """The listening sockets of ``count`` processes on ``host:port`` (one per address the host
    name has): one group per process with ``SO_REUSEPORT`` on Linux, else one group shared by all.
    Raises ``OSError`` as ``bind`` does; a port in use is tried again for ``BIND_RETRY_SECONDS``."""
    deadline = time.monotonic() + BIND_RETRY_SECONDS
    while True:
        try:
            return _listening_sockets(host, port, count)
        except OSError as error:
            if error.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _listening_sockets(host: str, port: int, count: int) -> list[list[socket.socket]]:
    addresses = _addresses(host, port)
    several = len(addresses) > 1
    reuse_port = _reuse_port() and count > 1
    groups: list[list[socket.socket]] = []
    try:
        if reuse_port:
            # ``SO_REUSEPORT`` would also let a second server on this port join ours: a plain bind
            # first fails if anything else (another patchbay too) listens there
            for family, address in addresses:
                _bind(family, address, reuse_port=False, several=several).close()
        first: list[socket.socket] = []
        for family, address in addresses:
            first.append(_bind(family, address, reuse_port=reuse_port, several=several))
        groups.append(first)
        if not reuse_port:
            return [first] * count
        bound = [(sock.family, sock.getsockname()) for sock in first]  # port 0: the others join the chosen port
        for _ in range(count - 1):
            groups.append([_bind(family, address, reuse_port=True, several=several) for family, address in bound])
        return groups
    except BaseException:
        for group in groups:
            for sock in group:
                sock.close()
        raise


# ---------------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a child: be killed when the parent dies (Linux), and exit now if it already did."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def parent_watch(parent: int, every: float = 1.0):
    """A cleanup context for a child's app: stop it if its parent is gone (where
    ``PR_SET_PDEATHSIG`` does not exist, or was missed)."""
    import asyncio

    async def watch(_app) -> None:
        async def check() -> None:
            while os.getppid() == parent:
                await asyncio.sleep(every)
            log.warning("the parent process %d is gone; stopping", parent)
            os.kill(os.getpid(), signal.SIGTERM)

        task = asyncio.create_task(check(), name="patchbay-parent-watch")
        yield
        task.cancel()

    return watch


def label_logs(label: str) -> None:
    """Put ``label`` (which process) in every line of the root logger's handlers (in place of the
    label they had: a child forked from the labelled parent)."""
    for handler in logging.getLogger().handlers:
        formatter = handler.formatter or logging.Formatter("%(levelname)s %(name)s %(message)s")
        base = getattr(handler, "_patchbay_unlabelled", None) or formatter._fmt or "%(message)s"
        handler._patchbay_unlabelled = base  # type: ignore[attr-defined]
        fmt = base.replace("%(name)s", f"[{label}] %(name)s", 1) if "%(name)s" in base else f"[{label}] {base}"
        handler.setFormatter(type(formatter)(fmt))


def notify_ready(fd: int):
    """An ``on_startup`` handler for a child's app: tell the parent it has started."""

    async def ready(_app) -> None:
        with contextlib.suppress(OSError):
            os.write(fd, b"r")
            os.close(fd)

    return ready


# ---------------------------------------------------------------------------------------------
# The parent
# ---------------------------------------------------------------------------------------------


@attrs.define
class _Child:
    index: int
    pid: int
    ready_fd: int | None
    started: float
    ready: bool = False


class Supervisor:
    """Forks ``count`` children running ``child(index, ready_fd)`` (which writes to ``ready_fd``
    once started and returns an exit code), restarts the ones that die, and stops them all on
    SIGTERM or SIGINT.

    At the first start, child 0 starts alone and the others once it serves: what a first start
    creates in the database (the signing key, the console's client, the system flow templates) is
    then made by one process rather than raced for by all.

    :param stop_seconds: how long the children may take to stop before they are killed.
    :param on_ready: called once, when every child has started for the first time.
    """

    def __init__(self, count: int, child: Callable[[int, int], int], *, stop_seconds: float, on_ready: Callable[[], None] | None = None) -> None:
        self.count = count
        self.child = child
        self.stop_seconds = stop_seconds
        self.on_ready = on_ready
        self.children: dict[int, _Child] = {}  # by pid
        self.failures = [0] * count
        self.restart_at: dict[int, float] = {}  # index -> when
        self.signalled: int | None = None
        self._stopping = False
        self._wake_r = self._wake_w = -1

    # -- signals -----------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT):
            if self.signalled is not None:  # a second one: do not wait any longer
                for child in self.children.values():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child.pid, signal.SIGKILL)
            self.signalled = signum

    def _install_signals(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        signal.set_wakeup_fd(self._wake_w)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(signum, self._on_signal)

    # -- children ----------------------------------------------------------------------------

    def _spawn(self, index: int) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.setpgid(0, 0)  # a terminal's Ctrl-C reaches the parent alone; it stops the children once
                signal.set_wakeup_fd(-1)
                for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                os.close(self._wake_r)
                os.close(self._wake_w)
                os.close(read_fd)
                for child in self.children.values():
                    if child.ready_fd is not None:
                        os.close(child.ready_fd)
                die_with_parent(parent)
                code = self.child(index, write_fd)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.children[pid] = _Child(index, pid, read_fd, time.monotonic())
        log.info("process %d started (pid %d)", index, pid)

    def _reap(self, initial: bool) -> bool:
        """Collect dead children and plan their restarts; False when one died at the first start."""
        healthy = True
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return healthy
            if pid == 0:
                return healthy
            child = self.children.pop(pid, None)
            if child is None:
                continue
            if child.ready_fd is not None:
                os.close(child.ready_fd)
            how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"code {os.waitstatus_to_exitcode(status)}"
            if self.signalled is not None or self._stopping:
                continue
            if initial and not child.ready:
                log.error("process %d (pid %d) exited with %s while starting", child.index, pid, how)
                healthy = False
                continue
            lived = time.monotonic() - child.started
            self.failures[child.index] = 1 if lived >= HEALTHY_SECONDS else self.failures[child.index] + 1
            delay = min(RESTART_DELAY_CAP_SECONDS, RESTART_DELAY_SECONDS * 2 ** (self.failures[child.index] - 1))
            log.warning("process %d (pid %d) exited with %s after %.1fs; restarting it in %.1fs", child.index, pid, how, lived, delay)
            self.restart_at[child.index] = time.monotonic() + delay

    def _read_ready(self, readable: list[int]) -> None:
        for child in self.children.values():
            if child.ready_fd in readable:
                with contextlib.suppress(BlockingIOError):
                    data = os.read(child.ready_fd, 16)
                    os.close(child.ready_fd)
                    child.ready_fd = None
                    if data:
                        child.ready = True
                        log.info("process %d (pid %d) is serving", child.index, child.pid)

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass

    def run(self) -> int:
        """Run until SIGTERM or SIGINT (0), or until a child fails its first start (1)."""
        if threading.active_count() > 1:  # a forked child gets none of them, and no lock they held
            log.warning("forking with %d threads running: %s", threading.active_count(), [thread.name for thread in threading.enumerate()])
        self._install_signals()
        try:
            self._spawn(0)
            waiting = list(range(1, self.count))  # until process 0 serves
            initial = True
            while self.signalled is None:
                now = time.monotonic()
                timeout = max(0.0, min(self.restart_at.values()) - now) if self.restart_at else None
                fds = [self._wake_r] + [child.ready_fd for child in self.children.values() if child.ready_fd is not None]
                with contextlib.suppress(InterruptedError):
                    readable, _, _ = select.select(fds, [], [], timeout)
                    self._drain_wakeups()
                    self._read_ready(readable)
                if not self._reap(initial):
                    self._stop_all()
                    return 1
                if waiting and self.signalled is None and any(child.ready and child.index == 0 for child in self.children.values()):
                    for index in waiting:
                        self._spawn(index)
                    waiting = []
                if initial and len(self.children) == self.count and all(child.ready for child in self.children.values()):
                    initial = False
                    if self.on_ready is not None:
                        self.on_ready()
                now = time.monotonic()
                for index, when in list(self.restart_at.items()):
                    if when <= now and self.signalled is None:
                        del self.restart_at[index]
                        self._spawn(index)
            self._stop_all()
            return 0
        finally:
            signal.set_wakeup_fd(-1)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _stop_all(self) -> None:
        """SIGTERM to every child, then wait for them (SIGKILL after ``stop_seconds``)."""
        self._stopping = True
        self.restart_at.clear()
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_seconds
        while self.children:
            self._reap(initial=False)
            if not self.children:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                for child in self.children.values():
                    log.warning("process %d (pid %d) did not stop in %.0fs; killing it", child.index, child.pid, self.stop_seconds)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child.pid, signal.SIGKILL)
                deadline = time.monotonic() + 5
                continue
            with contextlib.suppress(InterruptedError):
                select.select([self._wake_r], [], [], min(left, 0.5))
                self._drain_wakeups()
        log.info("every process stopped")
