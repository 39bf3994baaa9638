"""The access log and the process's log format: the JSON line is exactly what ``json.dumps`` makes
of its fields (quotes, backslashes, non-ASCII and control characters in a path escaped alike), and
the formatter that makes each second's date once writes what ``logging.Formatter`` writes."""

from __future__ import annotations

import json
import logging

from aiohttp.test_utils import TestServer

from patchbay.core.http.middleware import LOG_FORMAT, JsonAccessLogger, LogFormatter, configure_logging


async def test_the_access_line_is_the_json_dumps_text_of_its_fields(aiohttp_client, make_app, caplog):
    server = TestServer(make_app())
    await server.start_server(access_log_class=JsonAccessLogger)  # as `patchbay serve` runs it
    client = await aiohttp_client(server)
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    await client.get("/connect/v1/providers/a%22b%5Cc%C3%A9%E2%9C%93%01d", headers={"X-Request-Id": "req-1"})
    await client.get("/health")
    (odd, plain) = [record.getMessage() for record in caplog.records if record.name == "aiohttp.access"]
    fields = json.loads(odd)
    assert odd == json.dumps(fields)
    assert list(fields) == ["ts", "request_id", "method", "path", "status", "duration_ms", "remote"]
    assert fields["path"] == '/connect/v1/providers/a"b\\cé✓\x01d'
    assert (fields["request_id"], fields["method"], fields["status"], fields["remote"]) == ("req-1", "GET", 401, "127.0.0.1")
    assert isinstance(fields["ts"], float) and isinstance(fields["duration_ms"], float)
    assert plain == json.dumps(json.loads(plain))


def test_the_cached_date_reads_as_the_standard_formatter_writes_it():
    standard, cached = logging.Formatter(LOG_FORMAT), LogFormatter(LOG_FORMAT)
    for created in (1764088888.123, 1764088888.999, 1764088889.0, 1764088888.5, 1764092000.25):
        record = logging.LogRecord("aiohttp.access", logging.INFO, __file__, 1, "line", None, None)
        record.created, record.msecs = created, (created - int(created)) * 1000
        assert cached.format(record) == standard.format(record)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "line", None, None)
    assert LogFormatter("%(asctime)s", datefmt="%H").format(record) == logging.Formatter("%(asctime)s", datefmt="%H").format(record)


def test_configure_logging_writes_the_log_format_to_a_file(tmp_path, monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    for flag in ("logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, flag, getattr(logging, flag))
    configure_logging("info", filename=tmp_path / "patchbay.log")
    try:
        logging.getLogger("patchbay.test").info("hello %s", "there")
        logging.getLogger("patchbay.test").debug("not at INFO")
    finally:
        for handler in root.handlers:
            handler.close()
    (line,) = (tmp_path / "patchbay.log").read_text().splitlines()
    assert line.endswith(" INFO patchbay.test hello there")
