"""CSV sent in a request: a raw ``text/csv`` body streamed as it arrives, or the ``csv`` field of a
JSON body, as chunks of text for ``core.tables.csvstream.csv_records``."""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from patchbay.core.errors import Invalid, UnsupportedMediaType
from patchbay.core.http.bodies import body_too_large, read_object

CHUNK_BYTES = 256 * 1024
JSON_SLICE = 256 * 1024
#: media types of a raw CSV body (``application/octet-stream`` is what a body without a type reads as)
RAW_TYPES = ("text/csv", "text/plain", "application/octet-stream")


async def csv_source(request: web.Request) -> tuple[AsyncIterator[str], dict[str, Any]]:
    """The CSV text of a request (streamed when sent raw; ``{"csv": ...}`` in a JSON body) and the
    JSON body's other fields (empty for a raw body); 415 for a body of another media type."""
    if request.content_type not in (*RAW_TYPES, "application/json"):
        raise UnsupportedMediaType(f"Content-Type must be text/csv or application/json, not {request.content_type}")
    if request.content_type == "application/json":
        body = await read_object(request)
        text = body.get("csv")
        if not isinstance(text, str):
            raise Invalid("Validation failed: 'csv' must be a string of CSV text")
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
        raise Invalid("CSV must be UTF-8 text") from None
    if tail:
        yield tail
