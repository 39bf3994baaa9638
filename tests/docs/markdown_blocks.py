"""The fenced code blocks of a Markdown file, for the docs checks."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order, with its info string's first word as language."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, start = opening["fence"], index
        body: list[str] = []
        index += 1
        while index < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[index]):
            body.append(lines[index])
            index += 1
        language = (opening["info"].split() or [""])[0].lower()
        found.append(Block(path, start + 1, language, "\n".join(body) + "\n"))
        index += 1
    return found
