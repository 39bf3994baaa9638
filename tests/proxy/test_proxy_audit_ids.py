"""Audit row ids are time-ordered UUID strings (version 7) whose random part comes from a generator
seeded once per process (no system call per row) and counts up within a millisecond: unique,
ordered by the millisecond they were made in, and a forked worker process does not repeat its
parent's sequence."""

from __future__ import annotations

import multiprocessing
import time
import uuid

from patchbay.core.connections.runtime import RowIds, row_id


def test_row_ids_are_distinct_version_7_uuid_strings_carrying_their_millisecond():
    before = time.time_ns() // 1_000_000
    ids = [row_id() for _ in range(20_000)]
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == len(ids)
    for value in ids[:500] + ids[-500:]:
        parsed = uuid.UUID(value)
        assert (parsed.version, parsed.variant, str(parsed)) == (7, uuid.RFC_4122, value)
        assert before <= parsed.int >> 80 <= after


def test_row_ids_of_later_milliseconds_sort_after_earlier_ones():
    first = row_id()
    millisecond = int(first.replace("-", "")[:12], 16)
    while time.time_ns() // 1_000_000 <= millisecond:
        time.sleep(0.0005)
    assert all(row_id() > first for _ in range(1000))


def _five_ids() -> list[str]:
    return [row_id() for _ in range(5)]


def test_a_forked_child_makes_other_row_ids_than_its_parent():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.apply(_five_ids)
    assert len(child) == 5 and not set(child) & set(_five_ids())


def test_the_ids_of_one_millisecond_count_up_from_random_bits_drawn_for_it():
    ids = RowIds()
    first, second = ids.at(1_764_320_000_000), ids.at(1_764_320_000_000)
    assert uuid.UUID(second).int == uuid.UUID(first).int + 1
    assert ids.at(1_764_320_000_001) > second
    other = RowIds()
    assert other.at(1_764_320_000_000) not in (first, second)


def test_the_audit_inserts_name_every_column_of_the_table():
    from patchbay.core.connections.models import ProxyCallLog
    from patchbay.core.connections.runtime import COLUMNS, LEAN_COLUMNS

    assert sorted(COLUMNS) == sorted(column.name for column in ProxyCallLog.__table__.columns)
    left_out = set(COLUMNS) - set(LEAN_COLUMNS)
    assert all(ProxyCallLog.__table__.c[name].nullable and ProxyCallLog.__table__.c[name].default is None for name in left_out)
