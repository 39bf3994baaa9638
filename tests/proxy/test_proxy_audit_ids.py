"""Audit row ids come from a generator seeded once per process (no system call per row): they are
version-4 UUID strings as ``new_id()`` makes, unique, and a forked worker process does not repeat
its parent's sequence."""

from __future__ import annotations

import multiprocessing
import uuid

from patchbay.core.connections.runtime import row_id


def test_row_ids_are_distinct_version_4_uuid_strings():
    ids = [row_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for value in ids[:500]:
        parsed = uuid.UUID(value)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, value)


def _five_ids() -> list[str]:
    return [row_id() for _ in range(5)]


def test_a_forked_child_makes_other_row_ids_than_its_parent():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.apply(_five_ids)
    assert len(child) == 5 and not set(child) & set(_five_ids())


def test_the_buffered_audit_row_names_every_column_of_the_table():
    from patchbay.core.connections.models import ProxyCallLog
    from patchbay.core.connections.runtime import AuditRow

    assert sorted(AuditRow._fields) == sorted(column.name for column in ProxyCallLog.__table__.columns)
