"""What the built-in webhook schemes share: the replay window of signed timestamps."""

from __future__ import annotations

import time

TOLERANCE_SECONDS = 300


def fresh(timestamp: str, *, now: float | None = None, milliseconds: bool = False) -> bool:
    """Whether a signed timestamp (seconds, or ``milliseconds``) is within five minutes of now."""
    try:
        moment = int(timestamp) / (1000 if milliseconds else 1)
    except (TypeError, ValueError):
        return False
    return abs((time.time() if now is None else now) - moment) <= TOLERANCE_SECONDS
