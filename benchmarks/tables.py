"""Table CSV import throughput and row search latency, on SQLite and PostgreSQL.

    python benchmarks/tables.py [--rows 100000] [--search-rows 1000000] [--queries 200] [--pg URL]

The default run takes several minutes (loading a million rows into each database); figures and
what they mean are in docs/data.md.

For each database (PostgreSQL when ``--pg`` or ``PATCHBAY_TEST_DATABASE_URL`` names a server; a
scratch database is created and dropped):

- import: a 100,000-row CSV (external_key, name, email, city, n) streamed through the table import
  (parse, header and type checks, key lookups, batched writes, search index), rows per second;
- baseline: the same rows, already parsed into tuples, bulk-inserted through the same driver in
  the same run (``executemany`` on SQLite, ``COPY`` on PostgreSQL) into a plain table of the same
  columns; printed with the ratio import / baseline. A second line shows the plain insert into the
  real ``table_rows`` (its indexes and the full-text index) for context;
- search: p50/p95 latency of the rows route's query (``list_rows``: full-text match, count and the
  first page of 20) over ``--search-rows`` rows, with a few ``LIKE '%...%'`` scans for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
from sqlalchemy import text

from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade
from patchbay.core.tables import bulk
from patchbay.core.tables.models import TableRow
from patchbay.core.tables.search import index_bulk_inserts, last_rowid, search_text_of
from patchbay.core.tables.service import create_table, list_rows
from patchbay.core.tables.transfer import import_csv
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Workspace

FIRST = [
    "ada",
    "grace",
    "alan",
    "katherine",
    "edsger",
    "barbara",
    "donald",
    "margaret",
    "dennis",
    "frances",
    "john",
    "radia",
    "tim",
    "linus",
    "guido",
    "ken",
    "bjarne",
    "niklaus",
    "leslie",
    "vint",
    "whitfield",
    "shafi",
    "silvio",
    "judea",
    "yann",
]
LAST = [
    "lovelace",
    "hopper",
    "turing",
    "johnson",
    "dijkstra",
    "liskov",
    "knuth",
    "hamilton",
    "ritchie",
    "allen",
    "mccarthy",
    "perlman",
    "berners",
    "torvalds",
    "rossum",
    "thompson",
    "stroustrup",
    "wirth",
    "lamport",
    "cerf",
    "diffie",
    "goldwasser",
    "micali",
    "pearl",
    "lecun",
]
CITIES = ["oslo", "lima", "kyoto", "austin", "lagos", "porto", "quito", "hanoi", "cairo", "perth", "dublin", "zurich", "denver", "nairobi"]
COLUMNS = [{"name": "name", "type": "text"}, {"name": "email", "type": "text"}, {"name": "city", "type": "text"}, {"name": "n", "type": "number"}]


def person(i: int) -> tuple[str, str, str, int]:
    first, last = FIRST[i % len(FIRST)], LAST[(i // len(FIRST)) % len(LAST)]
    return f"{first.title()} {last.title()}", f"{first}.{last}{i}@example.com", CITIES[i % len(CITIES)], i


def csv_text(rows: int) -> str:
    lines = ["external_key,name,email,city,n\n"]
    lines += [f"k{i},{name},{email},{city},{n}\n" for i, (name, email, city, n) in ((i, person(i)) for i in range(rows))]
    return "".join(lines)


async def chunks(text_: str, size: int = 256 * 1024):
    for start in range(0, len(text_), size):
        yield text_[start : start + size]


async def make_table(db: Database, slug: str) -> tuple[str, object]:
    async with db.transaction() as session:
        workspace = Workspace(name=slug, slug=f"{slug}-{uuid.uuid4().hex[:6]}", plan="enterprise")
        session.add(workspace)
    async with db.transaction(tenant=workspace.id) as session:
        table = await create_table(session, workspace_id=workspace.id, name=slug, slug=slug, columns=COLUMNS)
    return workspace.id, table


def prepared_rows(rows: int, workspace_id: str, table_id: str, prefix: str, offset: int = 0) -> list[dict]:
    now = utcnow()
    result = []
    for i in range(offset, offset + rows):
        name, email, city, n = person(i)
        data = {"name": name, "email": email, "city": city, "n": n}
        result.append(
            {
                "id": bulk.ordered_id(),
                "workspace_id": workspace_id,
                "table_id": table_id,
                "external_key": f"{prefix}{i}",
                "data": data,
                "search_text": search_text_of(data.values()),
                "created_at": now,
                "updated_at": now,
            }
        )
    return result


async def plain_insert(db: Database, rows: list[dict], table_name: str) -> float:
    """The driver's own bulk insert of ready tuples: executemany (SQLite) or COPY (PostgreSQL)."""
    table = TableRow.__table__
    columns = [c.name for c in table.columns]
    async with db.engine.connect() as connection:
        dialect = connection.dialect
        processors = [table.c[name].type.bind_processor(dialect) for name in columns]
        values = [tuple(p(row[c]) if p else row[c] for c, p in zip(columns, processors, strict=True)) for row in rows]
        started = time.perf_counter()
        if dialect.name == "postgresql":
            raw = await connection.get_raw_connection()
            await raw.driver_connection.copy_records_to_table(table_name, records=values, columns=columns)
        else:
            await connection.exec_driver_sql(f"INSERT INTO {table_name} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", values)
        await connection.commit()
        elapsed = time.perf_counter() - started
    return elapsed


async def bench_import(db: Database, rows: int) -> dict[str, float]:
    workspace_id, table = await make_table(db, "imports")
    text_ = csv_text(rows)
    started = time.perf_counter()
    report = await import_csv(db, table, chunks(text_))
    import_seconds = time.perf_counter() - started
    assert report.created == rows and report.rejected == 0, report.json()
    # baseline: same rows into a plain table with the same columns, no indexes
    async with db.engine.begin() as connection:
        await connection.execute(text("DROP TABLE IF EXISTS bench_plain_rows"))
        await connection.execute(text("CREATE TABLE bench_plain_rows AS SELECT * FROM table_rows WHERE 1 = 0"))
    _, other = await make_table(db, "baseline")
    plain_seconds = await plain_insert(db, prepared_rows(rows, workspace_id, other.id, "p"), "bench_plain_rows")
    _, indexed = await make_table(db, "indexed")
    async with db.transaction() as session:  # for context: into table_rows itself, indexed for search
        after = await last_rowid(session, TableRow.__table__)
    indexed_rows = prepared_rows(rows, workspace_id, indexed.id, "i")
    started = time.perf_counter()
    async with db.transaction() as session:
        await bulk.insert_rows(session, TableRow.__table__, indexed_rows)
        await index_bulk_inserts(session, TableRow.__table__, after)
    indexed_seconds = time.perf_counter() - started
    async with db.engine.begin() as connection:
        await connection.execute(text("DROP TABLE bench_plain_rows"))
    return {"import": rows / import_seconds, "plain": rows / plain_seconds, "indexed": rows / indexed_seconds}


async def load_rows(db: Database, workspace_id: str, table_id: str, rows: int) -> None:
    """Fill a table fast for the search benchmark (index built once at the end, not per batch)."""
    postgres = db.is_postgres
    if postgres:
        async with db.engine.begin() as connection:
            await connection.execute(text("DROP INDEX IF EXISTS ix_table_rows_fts"))
    batch = 50_000
    async with db.transaction() as session:
        after = await last_rowid(session, TableRow.__table__)
    for start in range(0, rows, batch):
        chunk = prepared_rows(min(batch, rows - start), workspace_id, table_id, "s", offset=start)
        async with db.transaction() as session:
            await bulk.insert_rows(session, TableRow.__table__, chunk)
    async with db.engine.begin() as connection:
        if postgres:
            await connection.execute(text("CREATE INDEX ix_table_rows_fts ON table_rows USING gin (to_tsvector('simple', search_text))"))
            await connection.execute(text("ANALYZE table_rows"))
    if not postgres:
        async with db.transaction() as session:
            await index_bulk_inserts(session, TableRow.__table__, after)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def bench_search(db: Database, rows: int, queries: int) -> dict[str, float]:
    workspace_id, table = await make_table(db, "search")
    started = time.perf_counter()
    await load_rows(db, workspace_id, table.id, rows)
    load_seconds = time.perf_counter() - started
    rng = random.Random(7)
    terms = []
    for _ in range(queries):
        i = rng.randrange(rows)
        name, email, city, _ = person(i)
        terms.append(rng.choice([email, email.split("@")[0], f"{name} {city}", f"{name.split()[1][:5]} {i}"]))
    latencies = []
    found = 0
    async with db.session(tenant=workspace_id) as session:
        for term in terms:
            started = time.perf_counter()
            page, total = await list_rows(session, table, page=1, limit=20, search=term)
            latencies.append((time.perf_counter() - started) * 1000)
            found += bool(total)
        like = []
        for term in terms[:5]:
            started = time.perf_counter()
            await session.execute(
                text("SELECT count(*) FROM table_rows WHERE table_id = :t AND lower(search_text) LIKE :q"),
                {"t": table.id, "q": f"%{term.lower().split('@')[0]}%"},
            )
            like.append((time.perf_counter() - started) * 1000)
    assert found == len(terms), f"only {found} of {len(terms)} searches found their row"
    return {"p50": statistics.median(latencies), "p95": percentile(latencies, 0.95), "like_p50": statistics.median(like), "load": load_seconds}


async def run(url: str, label: str, rows: int, search_rows: int, queries: int) -> None:
    db = Database(url)
    try:
        await upgrade(db)
        imported = await bench_import(db, rows)
        print(
            f"{label:<10} import   {imported['import']:>9,.0f} rows/s   plain bulk insert {imported['plain']:>9,.0f} rows/s   "
            f"ratio {imported['import'] / imported['plain']:.2f}x   (plain into table_rows with its indexes: {imported['indexed']:,.0f} rows/s, "
            f"ratio {imported['import'] / imported['indexed']:.2f}x)"
        )
        searched = await bench_search(db, search_rows, queries)
        print(
            f"{label:<10} search   p50 {searched['p50']:.1f} ms   p95 {searched['p95']:.1f} ms over {search_rows:,} rows "
            f"({queries} queries; LIKE scan p50 {searched['like_p50']:.0f} ms; loaded in {searched['load']:.0f} s)"
        )
        sys.stdout.flush()
    finally:
        await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--search-rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pg", default=os.environ.get("PATCHBAY_TEST_DATABASE_URL"))
    parser.add_argument("--skip", choices=("sqlite", "postgresql"), action="append", default=[])
    args = parser.parse_args()
    if "sqlite" not in args.skip:
        with tempfile.TemporaryDirectory() as folder:
            await run(f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}", "sqlite", args.rows, args.search_rows, args.queries)
    if args.pg and "postgresql" not in args.skip:
        name = f"pbbench_{uuid.uuid4().hex[:8]}"
        admin = args.pg.replace("postgresql+asyncpg://", "postgresql://", 1)
        connection = await asyncpg.connect(admin)
        await connection.execute(f'CREATE DATABASE "{name}"')
        try:
            await run(f"{args.pg.rpartition('/')[0]}/{name}", "postgresql", args.rows, args.search_rows, args.queries)
        finally:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await connection.close()
    elif not args.pg:
        print("postgresql skipped: pass --pg or set PATCHBAY_TEST_DATABASE_URL")


if __name__ == "__main__":
    asyncio.run(main())
