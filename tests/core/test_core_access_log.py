"""The access log and the process's log format: the JSON line is exactly what ``json.dumps`` makes
of its fields (quotes, backslashes, non-ASCII and control characters in a path escaped alike) but
for its two numbers' fixed decimals, and
the formatter that makes each second's date once writes what ``logging.Formatter`` writes."""

from __future__ import annotations

import json
import logging
import os
import re
import time

from aiohttp.test_utils import TestServer

from patchbay.core.http import middleware
from patchbay.core.http.middleware import LOG_FORMAT, BatchingHandler, JsonAccessLogger, LogFormatter, configure_logging, sole_batching_handler


def _dumped(fields: dict) -> str:
    """``json.dumps`` of an access line's fields, with its numbers as the line writes them."""
    text = json.dumps({**fields, "ts": "<ts>", "duration_ms": "<duration>"})
    return text.replace('"<ts>"', f"{fields['ts']:.3f}").replace('"<duration>"', f"{fields['duration_ms']:.2f}")


async def test_the_access_line_is_the_json_dumps_text_of_its_fields(aiohttp_client, make_app, caplog):
    server = TestServer(make_app())
    await server.start_server(access_log_class=JsonAccessLogger)  # as `patchbay serve` runs it
    client = await aiohttp_client(server)
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    await client.get("/connect/v1/providers/a%22b%5Cc%C3%A9%E2%9C%93%01d", headers={"X-Request-Id": "req-1"})
    await client.get("/health")
    (odd, plain) = [record.getMessage() for record in caplog.records if record.name == "aiohttp.access"]
    fields = json.loads(odd)
    assert odd == _dumped(fields)
    assert re.search(r'^\{"ts": \d+\.\d{3}, .*"duration_ms": \d+\.\d{2}, ', odd), odd
    assert list(fields) == ["ts", "request_id", "method", "path", "status", "duration_ms", "remote"]
    assert fields["path"] == '/connect/v1/providers/a"b\\cé✓\x01d'
    assert (fields["request_id"], fields["method"], fields["status"], fields["remote"]) == ("req-1", "GET", 401, "127.0.0.1")
    assert isinstance(fields["ts"], float) and isinstance(fields["duration_ms"], float)
    assert plain == _dumped(json.loads(plain))


def test_the_cached_date_reads_as_the_standard_formatter_writes_it():
    standard, cached = logging.Formatter(LOG_FORMAT), LogFormatter(LOG_FORMAT)
    for created in (1764088888.123, 1764088888.999, 1764088889.0, 1764088888.5, 1764092000.25):
        record = logging.LogRecord("aiohttp.access", logging.INFO, __file__, 1, "line", None, None)
        record.created, record.msecs = created, (created - int(created)) * 1000
        assert cached.format(record) == standard.format(record)
        assert cached.time_text(created) == standard.formatTime(
            logging.makeLogRecord({"created": created, "msecs": int((created - int(created)) * 1000) + 0.0})
        )
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


def _configured(monkeypatch, tmp_path) -> logging.Logger:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    for flag in ("logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, flag, getattr(logging, flag))
    configure_logging("info", filename=tmp_path / "patchbay.log")
    return root


async def test_the_access_line_goes_straight_to_the_batch_as_its_record_would_read(aiohttp_client, make_app, tmp_path, monkeypatch):
    root = _configured(monkeypatch, tmp_path)
    try:
        (handler,) = root.handlers
        assert sole_batching_handler(logging.getLogger("aiohttp.access")) is handler  # the record-free way
        made, make_record = [], logging.Logger.makeRecord
        monkeypatch.setattr(logging.Logger, "makeRecord", lambda *args, **kw: made.append(args) or make_record(*args, **kw))
        server = TestServer(make_app())
        await server.start_server(access_log_class=JsonAccessLogger)
        client = await aiohttp_client(server)
        await client.get("/health", headers={"X-Request-Id": "req-2"})
        await client.close()
        assert not [args for args in made if args[1] == "aiohttp.access"]
    finally:
        for handler in root.handlers:
            handler.close()
    (line,) = [line for line in (tmp_path / "patchbay.log").read_text().splitlines() if " aiohttp.access " in line]
    match = re.fullmatch(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO aiohttp\.access (\{.*\})", line)
    assert match, line
    fields = json.loads(match[2])
    assert (fields["request_id"], fields["path"], fields["status"]) == ("req-2", "/health", 200)
    # the same text the standard formatter gives a record made at that moment
    record = logging.makeLogRecord({"name": "aiohttp.access", "levelno": logging.INFO, "levelname": "INFO", "msg": match[2], "created": fields["ts"]})
    record.msecs = int((record.created - int(record.created)) * 1000) + 0.0
    assert logging.Formatter(LOG_FORMAT).format(record)[:19] == match[1][:19]


def test_a_capturing_handler_or_a_filter_gets_the_access_record(monkeypatch, tmp_path):
    root = _configured(monkeypatch, tmp_path)
    access = logging.getLogger("aiohttp.access")
    try:
        extra = logging.NullHandler()
        root.addHandler(extra)
        assert sole_batching_handler(access) is None
        root.removeHandler(extra)
        monkeypatch.setattr(access, "filters", [lambda record: True])
        assert sole_batching_handler(access) is None
    finally:
        for handler in root.handlers:
            handler.close()


def _wait_for(path, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return True
        time.sleep(0.02)
    return False


def test_batched_lines_are_written_within_the_interval_and_a_warning_at_once(tmp_path, monkeypatch):
    log_file = tmp_path / "batch.log"
    handler = BatchingHandler(filename=log_file)
    handler.setFormatter(LogFormatter(LOG_FORMAT))
    try:
        handler.add_line("first line")
        assert _wait_for(log_file, "first line", middleware.BATCH_SECONDS + 5)  # the writer thread's batch
        monkeypatch.setattr(middleware, "BATCH_SECONDS", 3600.0)
        handler.close()
        handler = BatchingHandler(filename=log_file)  # its thread now waits an hour
        handler.setFormatter(LogFormatter(LOG_FORMAT))
        handler.add_line("queued line")
        assert "queued line" not in log_file.read_text()
        handler.handle(logging.makeLogRecord({"name": "x", "levelno": logging.WARNING, "levelname": "WARNING", "msg": "a warning"}))
        lines = log_file.read_text().splitlines()
        assert lines[-2] == "queued line" and lines[-1].endswith(" WARNING x a warning")  # in order, without waiting
        for n in range(middleware.BATCH_LINES):
            handler.add_line(f"line {n}")
        assert f"line {middleware.BATCH_LINES - 1}" in log_file.read_text()  # a full batch is written
    finally:
        handler.close()


def test_a_forked_child_still_writes_its_batches(tmp_path):
    log_file = tmp_path / "fork.log"
    handler = BatchingHandler(filename=log_file)
    try:
        pid = os.fork()
        if pid == 0:  # the child: no flush at exit, only its own writer thread can write the line
            handler.add_line("from the child")
            ok = _wait_for(log_file, "from the child", middleware.BATCH_SECONDS + 5)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        handler.close()
