"""CSV in and out without holding a whole file: text split into records as it arrives (a request's
body is read by ``core.http.csv_bodies``), and CSV text produced row by row. Bad CSV is refused with
:class:`~patchbay.core.errors.Invalid` naming the line.

A record may span lines (a quoted field holding a newline). A chunk is cut only after a line that
leaves an even number of quote characters pending, which in RFC 4180 CSV (quotes inside quoted
fields are doubled) is exactly a record boundary; the standard ``csv`` module parses each run of
complete records. Line numbers in reports are the physical line where a record starts (the header
is line 1).

Text going out is neutralized for spreadsheets (OWASP's rule against CSV injection): a cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets one leading ``'``, so that a
formula typed into a lead form opens as text. Quotes already leading up to such a character get one
more, which makes the escape reversible: :func:`restore` undoes exactly what :func:`neutralize` did,
and an export imported back gives the same values.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any

from patchbay.core.errors import Invalid

#: longest record (characters) held while waiting for its end: an unbalanced quote would otherwise
#: make the rest of the upload one record in memory
MAX_RECORD_CHARS = 1024 * 1024
#: a cell a spreadsheet would run as a formula, after any quotes an earlier escape added
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_ESCAPED_FORMULA = re.compile(r"'+[=+\-@\t\r]")


async def csv_records(chunks: AsyncIterator[str]) -> AsyncIterator[list[tuple[int, list[str]]]]:
    """Batches of ``(line_number, fields)``; blank lines are skipped."""
    carry = ""
    pending: list[str] = []
    quotes = 0
    line = 0
    pending_chars = 0
    async for chunk in chunks:
        parts = (carry + chunk).split("\n")
        carry = parts.pop()
        ready: list[str] = []
        for part in parts:
            pending.append(part + "\n")
            pending_chars += len(part) + 1
            quotes += part.count('"')
            if not quotes % 2:
                ready.extend(pending)
                pending.clear()
                pending_chars = quotes = 0
        if pending_chars + len(carry) > MAX_RECORD_CHARS:
            first_line = line + len(ready) + 1
            raise Invalid(f"CSV record at line {first_line} is longer than {MAX_RECORD_CHARS} characters (an unbalanced quote?)")
        if ready:
            batch, line = _parse(ready, line)
            if batch:
                yield batch
    rest = pending + ([carry] if carry else [])
    if rest:
        batch, line = _parse(rest, line)
        if batch:
            yield batch


def _parse(lines: list[str], first: int) -> tuple[list[tuple[int, list[str]]], int]:
    reader = csv.reader(lines)
    batch = []
    consumed = 0
    try:
        for fields in reader:
            start = first + consumed + 1
            consumed = reader.line_num
            if fields and not (len(fields) == 1 and not fields[0].strip()):
                batch.append((start, fields))
    except csv.Error as error:
        raise Invalid(f"Malformed CSV at line {first + consumed + 1}: {error}") from None
    return batch, first + len(lines)


def read_header(fields: list[str]) -> list[str]:
    """The column names of a header record; 400 for an empty or repeated name."""
    names = [name.strip() for name in fields]
    seen = set()
    for position, name in enumerate(names, start=1):
        if not name:
            raise Invalid(f"CSV header has an empty column name at position {position}")
        if name in seen:
            raise Invalid(f"CSV header names column '{name}' twice")
        seen.add(name)
    return names


def neutralize(text: str) -> str:
    """``text`` as a cell a spreadsheet shows as text: one ``'`` more before a formula character."""
    return "'" + text if _FORMULA.match(text) else text


def restore(cell: str) -> str:
    """The text :func:`neutralize` was given for ``cell`` (a cell without its escape is kept as it is)."""
    return cell[1:] if _ESCAPED_FORMULA.match(cell) else cell


def csv_line(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(values)
    return buffer.getvalue()


class CsvWriter:
    """Rows to CSV text, many rows per string (one ``write`` per batch)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def rows(self, rows: Iterable[Iterable[Any]]) -> str:
        self._writer.writerows(rows)
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text
