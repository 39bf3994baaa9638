"""Request ids made by the server: unique per request, and a forked worker process does not repeat
its parent's sequence (the random part is drawn again in the child, and once a prefix's count runs
out)."""

from __future__ import annotations

import os
import re

from patchbay.core.http.middleware import RequestIds, new_request_id


async def test_each_request_gets_its_own_id(client):
    seen = set()
    for _ in range(20):
        response = await client.get("/health")
        seen.add(response.headers["X-Request-Id"])
    assert len(seen) == 20
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{16}", request_id) for request_id in seen)


def test_a_forked_child_makes_other_ids_than_its_parent():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then leave at once
        os.write(write, ",".join(new_request_id() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 4096).decode().split(",")
    os.close(read)
    os.waitpid(pid, 0)
    parent = [new_request_id() for _ in range(5)]
    assert len(child) == 5 and not set(child) & set(parent)


def test_a_prefix_whose_count_ran_out_is_drawn_again():
    ids = RequestIds()
    first = ids.new()
    ids._count = iter(range(RequestIds.SPAN - 1, RequestIds.SPAN + 5))
    last_of_prefix, next_one = ids.new(), ids.new()
    assert last_of_prefix[:10] == first[:10] and last_of_prefix[10:] == "ffffff"
    assert next_one[:10] != first[:10] and next_one[10:] == "000000"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{16}", value) for value in (first, last_of_prefix, next_one))
