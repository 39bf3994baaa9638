"""``storage.sql.one_of``, "column is one of these values", on SQLite and PostgreSQL: the same rows
as ``in_`` (and ``~`` as ``not_in``) for no, one and many values, strings and integers, NULL included;
values that change between executions of one cached statement; on PostgreSQL one statement text
(``= ANY`` of an array) whatever the number of values, and the values kept out of the cache key."""

import warnings

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, event, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from patchbay.core.jobs.models import Job
from patchbay.core.storage.sql import one_of, one_of_param

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

_META = MetaData()
_PROBE = Table("one_of_probe", _META, Column("id", String(36), primary_key=True), Column("n", Integer), Column("label", String(20)))
_ROWS = [{"id": f"id-{i}", "n": i, "label": None if i % 4 == 0 else f"label-{i % 3}"} for i in range(1, 21)]

VALUE_SETS = {
    "id": [[], ["id-3"], ["id-1", "id-7", "id-20", "id-99"], [f"id-{i}" for i in range(50)]],
    "n": [[], [5], [2, 3, 5, 7, 11, 13, 404], list(range(-10, 40))],
    "label": [[], ["label-1"], ["label-0", "label-2", "nothing"]],
}


@pytest.fixture
async def probe(db):
    async with db.engine.begin() as connection:
        await connection.run_sync(_META.create_all)
        await connection.execute(insert(_PROBE), _ROWS)
    return db


async def _ids(db, condition) -> list[str]:
    async with db.engine.connect() as connection:
        return list((await connection.execute(select(_PROBE.c.id).where(condition).order_by(_PROBE.c.id))).scalars())


@pytest.mark.parametrize("name", list(VALUE_SETS))
async def test_one_of_matches_what_in_matches(probe, name):
    column = _PROBE.c[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SAWarning (inherit_cache, cartesian products...)
        for values in VALUE_SETS[name]:  # one statement shape: after the first, served from the compiled cache
            assert await _ids(probe, one_of(column, values)) == await _ids(probe, column.in_(values)), values
            assert await _ids(probe, ~one_of(column, values)) == await _ids(probe, column.not_in(values)), values
            assert await _ids(probe, ~~one_of(column, values)) == await _ids(probe, column.in_(values)), values
    assert await _ids(probe, one_of(column, [])) == []


async def test_one_of_takes_any_iterable_and_each_execution_its_own_values(probe):
    assert await _ids(probe, one_of(_PROBE.c.id, {"id-2", "id-4"})) == ["id-2", "id-4"]
    assert await _ids(probe, one_of(_PROBE.c.id, (f"id-{i}" for i in (9, 1)))) == ["id-1", "id-9"]
    assert await _ids(probe, one_of(_PROBE.c.n, [1]) & one_of(_PROBE.c.id, ["id-1", "id-2"])) == ["id-1"]
    assert await _ids(probe, one_of(_PROBE.c.n, [2]) & one_of(_PROBE.c.id, ["id-1", "id-2"])) == ["id-2"]


async def test_one_of_in_an_update_returning_rows(probe):
    async with probe.engine.begin() as connection:
        changed = await connection.execute(_PROBE.update().where(one_of(_PROBE.c.n, [1, 2, 3])).values(label="x").returning(_PROBE.c.id))
        assert sorted(changed.scalars()) == ["id-1", "id-2", "id-3"]
    assert await _ids(probe, _PROBE.c.label == "x") == ["id-1", "id-2", "id-3"]


async def test_one_of_param_takes_the_values_at_execution(probe):
    by_name = select(_PROBE.c.id).where(one_of_param(_PROBE.c.n, "numbers"), ~one_of_param(_PROBE.c.id, "not_ids")).order_by(_PROBE.c.id)
    async with probe.engine.connect() as connection:
        for numbers, not_ids in (([], []), ([3], []), ([1, 2, 3, 40], ["id-2"]), (list(range(50)), [f"id-{i}" for i in range(5, 50)])):
            found = list((await connection.execute(by_name, {"numbers": numbers, "not_ids": not_ids})).scalars())
            assert found == await _ids(probe, _PROBE.c.n.in_(numbers) & _PROBE.c.id.not_in(not_ids)), (numbers, not_ids)


def _sent(statement, dialect) -> str:
    """The text sent to the database: expanding parameters rendered as they are at execution."""
    return str(statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True}))


def test_one_statement_text_on_postgresql_whatever_the_number_of_values():
    dialect = postgresql.asyncpg.dialect()
    one, fifty = (select(Job.id).where(one_of(Job.id, [f"j{i}" for i in range(count)]), one_of(Job.attempts, range(count))) for count in (1, 50))
    assert _sent(one, dialect) == _sent(fifty, dialect)
    assert "jobs.id = ANY ($1::VARCHAR(36)[]) AND jobs.attempts = ANY ($2::INTEGER[])" in _sent(one, dialect)
    assert one.compile(dialect=dialect).params["param_1"] == ["j0"]
    # elsewhere, the usual expanding IN: one placeholder per value
    assert _sent(one, sqlite.dialect()).count("?") == 2 and _sent(fifty, sqlite.dialect()).count("?") == 100


def test_the_values_are_not_in_the_cache_key():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keys = [select(Job.id).where(one_of(Job.id, [f"j{i}" for i in range(count)]))._generate_cache_key() for count in (0, 1, 50)]
    assert all(key is not None for key in keys)
    assert keys[0] == keys[1] == keys[2]
    assert keys[1].bindparams[0].value == ["j0"]


async def test_postgresql_sends_one_statement_text_for_every_length(probe):
    if not probe.is_postgres:
        pytest.skip("PostgreSQL's = ANY; SQLite expands the IN")
    sent: list[str] = []
    listener = lambda _conn, _cursor, statement, *_: sent.append(statement)  # noqa: E731
    event.listen(probe.engine.sync_engine, "before_cursor_execute", listener)
    try:
        for count in (1, 2, 17, 50, 0):
            assert len(await _ids(probe, one_of(_PROBE.c.n, range(1, count + 1)))) == min(count, 20)
    finally:
        event.remove(probe.engine.sync_engine, "before_cursor_execute", listener)
    assert len(set(sent)) == 1 and "= ANY" in sent[0]
