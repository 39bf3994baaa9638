"""The proxy's client timeouts are made once per outbound client (``ConnectionsRuntime.timeouts``) and made again when its settings
change (a call never runs with a stale idle limit or total budget)."""

from __future__ import annotations

from patchbay.core.connections.runtime import ProxyTimeouts
from patchbay.core.outbound import Outbound
from patchbay.core.settings import OutboundSettings


def test_timeouts_follow_the_outbound_settings():
    outbound = Outbound(allow_insecure=True, limits=OutboundSettings(call_timeout_seconds=30, stream_idle_seconds=60))
    timeouts = ProxyTimeouts()
    stream, call = timeouts.get(outbound, stream=True), timeouts.get(outbound, stream=False)
    assert (stream.total, stream.sock_read, call.total) == (None, 60, 30)
    assert timeouts.get(outbound, stream=True) is stream and timeouts.get(outbound, stream=False) is call
    outbound.limits.stream_idle_seconds = 5
    outbound.limits.call_timeout_seconds = 7
    assert (timeouts.get(outbound, stream=True).sock_read, timeouts.get(outbound, stream=False).total) == (5, 7)
    other = Outbound(allow_insecure=True, limits=OutboundSettings(call_timeout_seconds=3, stream_idle_seconds=4))
    assert (timeouts.get(other, stream=True).sock_read, timeouts.get(other, stream=False).total) == (4, 3)
