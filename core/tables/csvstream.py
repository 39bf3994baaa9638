"""CSV in and out without holding a whole file: request bodies decoded and split into records as
they arrive, and CSV text produced row by row.

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

import codecs
import csv
import io
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any

from aiohttp import web

from patchbay.core.http.bodies import body_too_large, read_object
from patchbay.core.http.errors import ApiError, bad_request

CHUNK_BYTES = 256 * 1024
JSON_SLICE = 256 * 1024
#: longest record (characters) held while waiting for its end: an unbalanced quote would otherwise
#: make the rest of the upload one record in memory
MAX_RECORD_CHARS = 1024 * 1024
#: media types of a raw CSV body (``application/octet-stream`` is what a body without a type reads as)
RAW_TYPES = ("text/csv", "text/plain", "application/octet-stream")
#: a cell a spreadsheet would run as a formula, after any quotes an earlier escape added
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_ESCAPED_FORMULA = re.compile(r"'+[=+\-@\t\r]")


async def csv_source(request: web.Request) -> tuple[AsyncIterator[str], dict[str, Any]]:
    """The CSV text of a request (streamed when sent raw; ``{"csv": ...}`` in a JSON body) and the
    JSON body's other fields (empty for a raw body); 415 for a body of another media type."""
    if request.content_type not in (*RAW_TYPES, "application/json"):
        raise ApiError(415, f"Content-Type must be text/csv or application/json, not {request.content_type}")
    if request.content_type == "application/json":
        body = await read_object(request)
        text = body.get("csv")
        if not isinstance(text, str):
            raise bad_request("Validation failed: 'csv' must be a string of CSV text")
        return _slices(text.removeprefix("\ufeff")), body
    return _decoded(request), {}


async def _slices(text: str) -> AsyncIterator[str]:
    for start in range(0, len(text), JSON_SLICE):
        yield text[start : start + JSON_SLICE]


async def _decoded(request: web.Request) -> AsyncIterator[str]:
    """The body as text, read as it arrives; 413 once it passes the request's body limit (a
    streamed body is not bounded by aiohttp's ``client_max_size``)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()  # drops a byte-order mark
    limit = request.client_max_size
    received = 0
    try:
        async for chunk in request.content.iter_chunked(CHUNK_BYTES):
            received += len(chunk)
            if received > limit:
                raise body_too_large(limit)
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise bad_request("CSV must be UTF-8 text") from None
    if tail:
        yield tail


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
            raise bad_request(f"CSV record at line {first_line} is longer than {MAX_RECORD_CHARS} characters (an unbalanced quote?)")
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
        raise bad_request(f"Malformed CSV at line {first + consumed + 1}: {error}") from None
    return batch, first + len(lines)


def read_header(fields: list[str]) -> list[str]:
    """The column names of a header record; 400 for an empty or repeated name."""
    names = [name.strip() for name in fields]
    seen = set()
    for position, name in enumerate(names, start=1):
        if not name:
            raise bad_request(f"CSV header has an empty column name at position {position}")
        if name in seen:
            raise bad_request(f"CSV header names column '{name}' twice")
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
