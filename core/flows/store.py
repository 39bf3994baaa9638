"""The SQL of running executions, shaped for batches: every statement here has one shape whatever
the batch size (``storage.sql.one_of``, one text on PostgreSQL and an expanding ``IN`` on SQLite;
arrays on PostgreSQL; a JSON list or an executemany on SQLite), so SQLAlchemy compiles it once per
process, and it runs on the transaction's connection without the ORM. PostgreSQL 13 or newer
(``gen_random_uuid``), SQLite 3.35 or newer (``RETURNING``)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import String, and_, bindparam, func, or_, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from patchbay.core.flows.models import FlowExecution, FlowExecutionStep, FlowLoopItem
from patchbay.core.storage.base import UtcDateTime
from patchbay.core.storage.sql import one_of, one_of_param
from patchbay.core.timeutil import new_id

_EXECUTIONS = FlowExecution.__table__
_STEPS = FlowExecutionStep.__table__
_LOOP_ITEMS = FlowLoopItem.__table__
STARTED = ("id", "workspace_id", "flow_id", "version", "steps", "trigger_payload", "trigger_source", "attempts", "started_at", "replay_of")

_START = (
    _EXECUTIONS.update()
    .where(
        one_of_param(_EXECUTIONS.c.id, "ids"),
        or_(
            one_of(_EXECUTIONS.c.status, ("pending", "running")),
            and_(_EXECUTIONS.c.status == "waiting", _EXECUTIONS.c.resume_at <= bindparam("now", type_=UtcDateTime())),
        ),
    )
    .values(
        status="running",
        attempts=_EXECUTIONS.c.attempts + 1,
        updated_at=bindparam("now", type_=UtcDateTime()),
        lease_until=bindparam("lease_until", type_=UtcDateTime()),
        resume_at=None,
        started_at=func.coalesce(_EXECUTIONS.c.started_at, bindparam("now", type_=UtcDateTime())),
    )
    .returning(*[_EXECUTIONS.c[name] for name in STARTED])
)

_FINISH = {
    "postgresql": text("""
        UPDATE flow_executions AS e
        SET status = v.status, error = v.error, finished_at = :finished, updated_at = :finished, duration_ms = v.duration_ms, lease_until = NULL
        FROM unnest(CAST(:ids AS text[]), CAST(:statuses AS text[]), CAST(:errors AS text[]), CAST(:durations AS integer[]))
             AS v(id, status, error, duration_ms)
        WHERE e.id = v.id AND e.status = 'running'
        RETURNING e.id
    """),
    "sqlite": text("""
        UPDATE flow_executions
        SET status = v.status, error = v.error, finished_at = :finished, updated_at = :finished, duration_ms = v.duration_ms, lease_until = NULL
        FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS status, json_extract(value, '$[2]') AS error,
                     json_extract(value, '$[3]') AS duration_ms FROM json_each(:outcomes)) AS v
        WHERE flow_executions.id = v.id AND flow_executions.status = 'running'
        RETURNING flow_executions.id
    """),
}
_FINISH = {name: statement.bindparams(bindparam("finished", type_=UtcDateTime())).columns(id=String) for name, statement in _FINISH.items()}

STEP_COLUMNS = ("workspace_id", "execution_id", "position", "step_id", "type", "status", "input", "output", "error", "started_at", "finished_at", "duration_ms")
_STEP_ARRAYS = ("text", "text", "integer", "text", "text", "text", None, None, "text", "timestamptz", "timestamptz", "integer")
#: the step columns as arrays side by side; input and output are two JSON arrays (one encoding per
#: batch, not two per step) whose elements ``ROWS FROM`` zips with the arrays' items in order
_INSERT_STEPS_PG = text(
    f"INSERT INTO flow_execution_steps (id, {', '.join(STEP_COLUMNS)}) "
    f"SELECT CAST(gen_random_uuid() AS text), {', '.join(STEP_COLUMNS)} "
    "FROM ROWS FROM ("
    + ", ".join(
        f"unnest(CAST(:{name} AS {kind}[]))" if kind else f"jsonb_array_elements(CAST(:{name} AS jsonb))"
        for name, kind in zip(STEP_COLUMNS, _STEP_ARRAYS, strict=True)
    )
    + f") AS v({', '.join(STEP_COLUMNS)}) "
    "ON CONFLICT (execution_id, position) DO NOTHING"
)
_INSERT_STEPS_SQLITE = (
    f"INSERT INTO flow_execution_steps (id, {', '.join(STEP_COLUMNS)}) VALUES ({', '.join('?' * (1 + len(STEP_COLUMNS)))}) "
    "ON CONFLICT (execution_id, position) DO NOTHING"
)


async def start(connection: AsyncConnection, ids: list[str], now: Any, lease_until: Any) -> dict[str, dict[str, Any]]:
    """Mark the executions ``running`` (again, when resumed or waking), leased until ``lease_until``:
    one attempt more, ``started_at`` kept from the first. Answers the rows changed by id; an
    execution that has ended, or waits until later (a job of an earlier wait, answered early), is
    left out."""
    result = await connection.execute(_START, {"ids": ids, "now": now, "lease_until": lease_until})
    return {row["id"]: dict(row) for row in result.mappings()}


async def finish(connection: AsyncConnection, outcomes: list[tuple[str, str, str | None, int]], finished_at: Any) -> set[str]:
    """Store each outcome ``(id, status, error, duration_ms)`` of an execution still ``running``,
    all finished at ``finished_at``; answers the ids changed (not one another run had ended)."""
    if connection.dialect.name == "postgresql":
        ids, statuses, errors, durations = (list(column) for column in zip(*outcomes, strict=True))
        params = {"ids": ids, "statuses": statuses, "errors": errors, "durations": durations}
    else:
        params = {"outcomes": json.dumps(outcomes)}
    return set((await connection.execute(_FINISH[connection.dialect.name], {**params, "finished": finished_at})).scalars())


_RENEW = (
    _EXECUTIONS.update()
    .where(one_of_param(_EXECUTIONS.c.id, "ids"), _EXECUTIONS.c.status == "running")
    .values(lease_until=bindparam("lease_until", type_=UtcDateTime()))
)


async def renew(connection: AsyncConnection, ids: list[str], lease_until: Any) -> None:
    """Extend the lease of the executions (still ``running``) to ``lease_until``."""
    if ids:
        await connection.execute(_RENEW, {"ids": ids, "lease_until": lease_until})


async def park(connection: AsyncConnection, execution_id: str, resume_at: Any, now: Any) -> bool:
    """Store a running execution ``waiting`` until ``resume_at`` (its lease given up); False when it
    was no longer running (the reaper took it)."""
    result = await connection.execute(
        _EXECUTIONS.update()
        .where(_EXECUTIONS.c.id == execution_id, _EXECUTIONS.c.status == "running")
        .values(status="waiting", resume_at=resume_at, lease_until=None, updated_at=now)
    )
    return result.rowcount == 1


class StepWriter:
    """Inserts step records for one database (the runner's). On SQLite it keeps the bind processors
    of the columns that have one (input, output, the two timestamps), so the rows go to the driver as
    SQLAlchemy would send them, without its per-row work."""

    def __init__(self) -> None:
        self._sqlite_binds: tuple[Any, Any, Any] | None = None

    def _binds(self, dialect: Any) -> tuple[Any, Any, Any]:
        if self._sqlite_binds is None:
            self._sqlite_binds = tuple(_STEPS.c[name].type.bind_processor(dialect) or (lambda value: value) for name in ("input", "output", "started_at"))
        return self._sqlite_binds

    async def insert(self, connection: AsyncConnection, rows: list[tuple[Any, ...]]) -> None:
        """Insert step records, each a tuple in ``STEP_COLUMNS`` order; one already stored (a
        checkpoint written before a crash) is kept. On PostgreSQL one statement of arrays, the ids
        drawn by the server; on SQLite one executemany, each value bound as SQLAlchemy binds it."""
        if not rows:
            return
        if connection.dialect.name != "postgresql":
            dump_input, dump_output, stamp = self._binds(connection.dialect)
            await connection.exec_driver_sql(
                _INSERT_STEPS_SQLITE,
                [
                    (
                        new_id(),
                        workspace_id,
                        execution_id,
                        position,
                        step_id,
                        kind,
                        status,
                        dump_input(input_),
                        dump_output(output),
                        error,
                        stamp(started_at),
                        stamp(finished_at),
                        duration_ms,
                    )
                    for workspace_id, execution_id, position, step_id, kind, status, input_, output, error, started_at, finished_at, duration_ms in rows
                ],
            )
            return
        arrays = dict(zip(STEP_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))
        arrays["input"] = json.dumps(arrays["input"])
        arrays["output"] = json.dumps(arrays["output"])
        await connection.execute(_INSERT_STEPS_PG, arrays)


_LOOP_ITEM_KEY = ["execution_id", "position", "item_index"]
_LOOP_ITEMS_INSERT = {
    "postgresql": postgresql.insert(_LOOP_ITEMS).on_conflict_do_nothing(index_elements=_LOOP_ITEM_KEY),
    "sqlite": sqlite.insert(_LOOP_ITEMS).on_conflict_do_nothing(index_elements=_LOOP_ITEM_KEY),
}
_LOOP_ITEMS_OF = _LOOP_ITEMS.delete().where(one_of_param(_LOOP_ITEMS.c.execution_id, "ids"))
_LOOP_ITEMS_AT = _LOOP_ITEMS.delete().where(_LOOP_ITEMS.c.execution_id == bindparam("e"), _LOOP_ITEMS.c.position == bindparam("p"))


async def insert_loop_items(connection: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Insert completed loop items (``FlowLoopItem`` columns but the id); one already stored is kept."""
    if rows:
        await connection.execute(_LOOP_ITEMS_INSERT[connection.dialect.name], [{"id": new_id(), **row} for row in rows])


async def delete_loop_items(connection: AsyncConnection, execution_ids: list[str]) -> None:
    """Delete every loop item of the executions (they ended)."""
    if execution_ids:
        await connection.execute(_LOOP_ITEMS_OF, {"ids": execution_ids})


async def delete_loop_items_at(connection: AsyncConnection, loops: list[tuple[str, int]]) -> None:
    """Delete the items of each loop ``(execution id, position)`` (its step record is stored)."""
    if loops:
        await connection.execute(_LOOP_ITEMS_AT, [{"e": execution_id, "p": position} for execution_id, position in loops])
