"""Waiting for the clock, for tests whose subject counts in clock minutes."""

from __future__ import annotations

import asyncio
import time


async def start_within_one_clock_minute(needed: float = 15) -> None:
    """Return once at least ``needed`` seconds are left in the current clock minute (at once when
    they are, otherwise at the start of the next one). The database storage's rate-limit windows
    are clock minutes (every process agrees on them), so N+1 hits across a minute boundary fall into
    two windows and none is refused."""
    left = 60 - time.time() % 60
    if left < needed:
        await asyncio.sleep(left + 0.05)
