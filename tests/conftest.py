"""Shared fixtures: migrated databases (SQLite always; PostgreSQL when PATCHBAY_TEST_DATABASE_URL
names a server), settings, the application and an authenticated workspace.

Each test gets its own database: SQLite as a copy of a file migrated once per session, PostgreSQL as
``CREATE DATABASE ... TEMPLATE`` of a database migrated once per session, so tests never share rows
and several test runs (or developers) can share one server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from argon2 import PasswordHasher

from patchbay.core.app import create_app
from patchbay.core.settings import load_settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.users import service as users
from tests.clock import start_within_one_clock_minute

#: a `patchbay serve` a test starts runs one process unless the test asks for more
#: (tests/core/test_serve_processes.py, the cluster): a second process per server only slows the
#: suite's start-ups on two cores
os.environ.setdefault("PATCHBAY_PROCESSES", "1")

PG_ENV = "PATCHBAY_TEST_DATABASE_URL"
TEST_SECRET = "test-secret-key-0123456789"


def _admin_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


async def _migrate(url: str) -> None:
    db = Database(url)
    try:
        await upgrade(db)
    finally:
        await db.close()


async def _pg_execute(url: str, *statements: str) -> None:
    connection = await asyncpg.connect(_admin_dsn(url))
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


#: fixtures that start processes of their own (schemathesis, ``patchbay serve``, Node.js peers, a
#: browser): a test using one is ``slow``
SLOW_FIXTURES = frozenset({"schemathesis", "live_server", "start_server", "node_peers", "node", "node_packages", "browser_tools"})


def _on_postgresql(item: pytest.Item, used: set[str]) -> bool:
    """Whether ``item`` uses ``pg_url`` or is the ``"postgresql"`` side of a parametrized fixture."""
    params = item.callspec.params.values() if hasattr(item, "callspec") else ()
    return "pg_url" in used or any(isinstance(value, str) and value == "postgresql" for value in params)


def _start_rank(item: pytest.Item) -> int:
    """Where a test starts in the run: the cluster, then the schemathesis runs, then the other slow
    tests, then the rest. xdist hands out tests in collection order, so the longest start first and
    the short ones fill the workers' gaps at the end."""
    if item.get_closest_marker("cluster"):
        return 0
    if "schemathesis" in getattr(item, "fixturenames", ()):
        return 1
    return 2 if item.get_closest_marker("slow") else 3


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its worker plugin comes later)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers from what a test uses (docs/testing.md): ``postgres`` (:func:`_on_postgresql`),
    ``browser`` for a ``test_*_browser.py`` file, ``cluster`` for ``tests/cluster``, ``slow`` for
    those two and for :data:`SLOW_FIXTURES`. The browser tests share one xdist group: one Chromium
    at a time however many workers run. Then the order: :func:`_start_rank` (stable: a module's
    tests stay together)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if _on_postgresql(item, used):
            item.add_marker(pytest.mark.postgres)
        browser = item.path.name.endswith("_browser.py")
        cluster = item.path.parent.name == "cluster" and item.path.parent.parent.name == "tests"
        if browser:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))
        if cluster:
            item.add_marker(pytest.mark.cluster)
        if browser or cluster or used & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if not browser and (group := _shared_fixture_group(item)):
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_start_rank)


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The tests that share a module's or a class's fixture (a venv, a server, a pack's app) run on
    one xdist worker, so the fixture is made once rather than once per worker that gets one of them."""
    info = getattr(item, "_fixtureinfo", None)
    scopes = {definition.scope for definitions in (info.name2fixturedefs.values() if info else ()) for definition in definitions}
    if "module" in scopes:
        return item.nodeid.split("::", 1)[0]
    if "class" in scopes and item.cls is not None:
        return item.nodeid.rsplit("::", 1)[0]
    return None


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashing():
    """argon2id at its lowest cost in the suite's own process (a hash then costs about a
    millisecond, not a tenth of a second): hundreds of tests make users and sign them in. The
    servers the tests start as processes keep the default cost; tests/core/test_core_cli.py checks
    what they store."""
    default, users._hasher = users._hasher, PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    yield
    users._hasher = default


@pytest.fixture
async def whole_clock_minute():
    """Starts the test early enough in a clock minute to finish within it (``tests/clock.py``)."""
    await start_within_one_clock_minute()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    asyncio.run(_migrate(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def pg_template():
    url = os.environ.get(PG_ENV)
    if not url:
        yield None
        return
    name = f"pbtpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    asyncio.run(_pg_execute(url, f'CREATE DATABASE "{name}"'))
    asyncio.run(_migrate(_with_database(url, name)))
    yield name
    asyncio.run(_pg_execute(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def sqlite_url(tmp_path, sqlite_template) -> str:
    path = tmp_path / "patchbay.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
def pg_url(pg_template):
    """A fresh, migrated PostgreSQL database; skips when PATCHBAY_TEST_DATABASE_URL is unset."""
    url = os.environ.get(PG_ENV)
    if not url or pg_template is None:
        pytest.skip(f"PostgreSQL tests need {PG_ENV}")
    name = f"pbt_{uuid.uuid4().hex[:12]}"
    for attempt in range(5):  # the template may be briefly in use by another session
        try:
            asyncio.run(_pg_execute(url, f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"'))
            break
        except asyncpg.ObjectInUseError:
            time.sleep(0.2 * (attempt + 1))
    yield _with_database(url, name)
    asyncio.run(_pg_execute(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def pytest_configure(config: pytest.Config) -> None:
    """xdist hands out groups in collection order (the order :func:`_start_rank` makes), not the
    largest first."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all-databases", action="store_true", help="run every test that uses database_url on PostgreSQL too, marked both_databases or not (docs/testing.md)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``database_url`` is SQLite; a test marked ``both_databases`` (or every test, with
    ``--all-databases``) runs once on SQLite and once on PostgreSQL. The ids stay ``[sqlite]`` and
    ``[postgresql]``."""
    if "database_url" not in metafunc.fixturenames:
        return
    both = metafunc.definition.get_closest_marker("both_databases") is not None or metafunc.config.getoption("all_databases", False)
    metafunc.parametrize("database_url", ["sqlite", "postgresql"] if both else ["sqlite"], indirect=True)


@pytest.fixture
def database_url(request) -> str:
    """The test's database URL: SQLite, and PostgreSQL as well where :func:`pytest_generate_tests` says."""
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


@pytest.fixture
async def db(database_url) -> Database:
    """A :class:`Database` on the test's database (``database_url``), closed afterwards."""
    database = Database(database_url)
    yield database
    await database.close()


@pytest.fixture
def make_settings(tmp_path, sqlite_url):
    """``make_settings(**overrides)`` -> Settings on this test's SQLite database by default.

    Overrides use the names of ``Settings`` (``database_url=``, ``providers={...}``, ...)."""

    def make(**overrides: Any):
        environ = {
            "PATCHBAY_SECRET_KEY": TEST_SECRET,
            "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
            "PATCHBAY_DATABASE_URL": sqlite_url,
            "PATCHBAY_SCHEDULER": "false",
            "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        }
        settings = load_settings({}, environ)
        for key, value in overrides.items():
            setattr(settings, key, value)
        return settings

    return make


@pytest.fixture
def make_app(make_settings):
    """``make_app(plugins=(), background=False, **setting_overrides)`` -> a configured app."""

    def make(*, plugins=(), background: bool = False, **overrides: Any):
        return create_app(make_settings(**overrides), plugins=plugins, background=background, migrate=False)

    return make


@pytest.fixture
async def client(aiohttp_client, make_app):
    """A test client of the app on SQLite, with no background workers."""
    return await aiohttp_client(make_app())


@pytest.fixture
async def workspace(client) -> dict[str, Any]:
    """A workspace of ``client``'s app with an all-permission API key."""
    return await create_workspace_with_key(client.server.app)
