"""Backups of the database and their restore (``patchbay db backup`` / ``patchbay db restore``).

- **SQLite**: SQLite's online backup API copies a consistent snapshot page by page while the server
  keeps serving (its writers are not stopped; WAL readers see one point in time). Restoring copies
  the backup into the configured file the same way.
- **PostgreSQL**: ``pg_dump --format=custom`` and ``pg_restore --clean --if-exists``, the standard
  route; the client tools must be installed and their major version at least the server's.

A backup holds credentials and private keys encrypted with ``PATCHBAY_SECRET_KEY``: keep that secret
(or the data folder's generated key file) beside the backup, or the restored credentials cannot be read.
Restoring over a database that holds data needs ``force``; the restored schema is then brought to
this version by the usual migrations.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy.engine import make_url


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why."""


def _sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database:
        raise BackupError("the SQLite URL names no file")
    return Path(database)


def _libpq_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(f"{name} is not installed (PostgreSQL's client tools)")
    return path


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BackupError(f"{Path(command[0]).name} failed: {result.stderr.strip() or result.stdout.strip()}")


def _sqlite_has_data(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0


def _postgres_has_data(url: str) -> bool:
    result = subprocess.run(
        [_tool("psql"), "--no-psqlrc", "-tAc", "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'", _libpq_dsn(url)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise BackupError(f"psql failed: {result.stderr.strip()}")
    return int(result.stdout.strip() or 0) > 0


def _copy_sqlite(source: Path, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def backup(url: str, destination: Path) -> None:
    """Write a backup of the database at ``url`` to ``destination`` (created or replaced)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("sqlite"):
        source = _sqlite_path(url)
        if not source.exists():
            raise BackupError(f"there is no database at {source}")
        destination.unlink(missing_ok=True)
        _copy_sqlite(source, destination)
    else:
        _run([_tool("pg_dump"), "--format=custom", "--no-owner", "--file", str(destination), _libpq_dsn(url)])


def restore(url: str, source: Path, *, force: bool = False) -> None:
    """Replace the database at ``url`` with the backup ``source``; refuses a database that holds
    data unless ``force``."""
    if not source.is_file():
        raise BackupError(f"there is no backup at {source}")
    if url.startswith("sqlite"):
        target = _sqlite_path(url)
        if _sqlite_has_data(target) and not force:
            raise BackupError(f"{target} holds data: stop the server and restore with --force to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with contextlib.closing(sqlite3.connect(source)) as probe:
                probe.execute("PRAGMA schema_version").fetchone()
        except sqlite3.DatabaseError as error:
            raise BackupError(f"{source} is not a SQLite backup ({error})") from None
        _copy_sqlite(source, target)
    else:
        if _postgres_has_data(url) and not force:
            raise BackupError("the database holds data: stop the servers and restore with --force to replace it")
        _run([_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--single-transaction", "--dbname", _libpq_dsn(url), str(source)])
