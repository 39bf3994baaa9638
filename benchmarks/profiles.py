"""py-spy profiles of a benchmark's server, and where their samples go.

The benchmarks sample a process with :func:`start_py_spy` and :func:`stop_py_spy` (collapsed
stacks: one line per distinct stack with its sample count) and print :func:`print_shares` of the
file. Run alone, this module prints the shares of a profile already recorded:

    python benchmarks/profiles.py FILE [--by module|function] [--top 25]

Each sample goes to the innermost patchbay frame of its stack (``core/``, ``plugins/``,
``providers/``), shown as its module or ``module:function``: the patchbay code whose
call the CPU was spent in, library code under it included. A sample with no patchbay frame goes to
the innermost library's top package (``aiohttp``, ``asyncio``, ``sqlalchemy``, ...) marked
"no patchbay frame": the event loop, aiohttp's server before a handler runs, a worker thread.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

#: a frame of py-spy's collapsed stacks: ``function (path:line)``
FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*):\d+\)$")
#: not ``cli/``: its entry points sit under everything a process does, the event loop included
PATCHBAY_FOLDERS = ("core/", "plugins/", "providers/")


def start_py_spy(pid: int, destination: Path, *, gil: bool = False) -> subprocess.Popen:
    """py-spy sampling ``pid`` at 200 Hz into ``destination`` (collapsed stacks) until
    :func:`stop_py_spy`; ``gil`` keeps only the samples of the thread holding the GIL. The folder of
    ``destination`` is made when missing (py-spy would fail quietly and leave no profile)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "--rate", "200", "--pid", str(pid), "--output", str(destination)]
    if gil:
        command.append("--gil")
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_py_spy(process: subprocess.Popen) -> None:
    """Stop sampling; py-spy writes its file as it exits."""
    process.send_signal(signal.SIGINT)
    process.wait(30)


def _patchbay_module(path: str) -> str | None:
    relative = path.removeprefix("patchbay/")
    if relative.startswith(PATCHBAY_FOLDERS):
        return relative.removesuffix(".py").replace("/", ".")
    return None


def place(stack: str, by: str = "module") -> str:
    """Where one collapsed stack's samples go (see the module's docstring)."""
    library = None
    for frame in reversed(stack.split(";")):
        match = FRAME.match(frame)
        if match is None:
            continue
        module = _patchbay_module(match["path"])
        if module is not None:
            return f"{module}:{match['function']}" if by == "function" else module
        if library is None:
            library = match["path"].split("/", 1)[0].removesuffix(".py").strip("<>")
    return f"{library} (no patchbay frame)" if library else "no Python frame"


def counts(collapsed: Path, *, by: str = "module") -> Counter[str]:
    """Samples of ``collapsed`` by place (see the module's docstring)."""
    found: Counter[str] = Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if samples.isdigit():
            found[place(stack, by)] += int(samples)
    return found


def print_shares(collapsed: Path, *, by: str = "module", top: int = 25) -> None:
    """The ``top`` places of the profile's samples with their shares, largest first, then the rest."""
    found = counts(collapsed, by=by)
    total = sum(found.values()) or 1
    print(f"  py-spy profile {collapsed} ({total} samples), by innermost patchbay {by}:")
    ranked = found.most_common(top)
    for name, count in ranked:
        print(f"    {100 * count / total:5.1f} %  {name}")
    rest = total - sum(count for _, count in ranked)
    if rest:
        print(f"    {100 * rest / total:5.1f} %  the rest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="a py-spy profile in collapsed stacks (py-spy record --format raw)")
    parser.add_argument("--by", choices=("module", "function"), default="module")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print_shares(args.profile, by=args.by, top=args.top)


if __name__ == "__main__":
    main()
