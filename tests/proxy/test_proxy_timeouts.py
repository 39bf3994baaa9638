"""The proxy's client timeouts are made once per outbound client and made again when its settings
change (a call never runs with a stale idle limit or total budget)."""

from __future__ import annotations

from patchbay.core.outbound import Outbound
from patchbay.core.proxy.engine import _timeout
from patchbay.core.settings import OutboundSettings


def test_timeouts_follow_the_outbound_settings():
    outbound = Outbound(allow_insecure=True, limits=OutboundSettings(call_timeout_seconds=30, stream_idle_seconds=60))
    stream, call = _timeout(outbound, True), _timeout(outbound, False)
    assert (stream.total, stream.sock_read, call.total) == (None, 60, 30)
    assert _timeout(outbound, True) is stream and _timeout(outbound, False) is call
    outbound.limits.stream_idle_seconds = 5
    outbound.limits.call_timeout_seconds = 7
    assert (_timeout(outbound, True).sock_read, _timeout(outbound, False).total) == (5, 7)
    other = Outbound(allow_insecure=True, limits=OutboundSettings(call_timeout_seconds=3, stream_idle_seconds=4))
    assert (_timeout(other, True).sock_read, _timeout(other, False).total) == (4, 3)
