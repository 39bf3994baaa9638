"""The http step's JSON body is the same bytes whatever the order of its keys: a re-run after a
crash renders it from the checkpointed outputs and the trigger as stored (PostgreSQL's JSONB keeps
no key order) and sends it under the same ``Idempotency-Key``, which a receiver may check against
the body it saw first."""

from __future__ import annotations

import json

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.steps import BUILT_IN, RunContext
from patchbay.testing import Receiver


async def test_a_json_body_is_the_same_bytes_in_any_key_order(aiohttp_client, make_app):
    app = (await aiohttp_client(make_app())).server.app  # started: its outbound client open
    receiver = await Receiver().start()
    try:
        as_first_run = {"zulu": 1, "alpha": {"yankee": [{"x-ray": True, "bravo": None}], "charlie": "é"}, "mike": 2.5}
        as_stored = {"mike": 2.5, "zulu": 1, "alpha": {"charlie": "é", "yankee": [{"bravo": None, "x-ray": True}]}}
        context = RunContext(app[SERVICES], "ws-1", "flow-1", "execution-1", {}, step_id="notify")
        for body in (as_first_run, as_stored):
            output = await BUILT_IN["http"].run(context, {"method": "POST", "url": receiver.url + "/hook", "body": body})
            assert output["status"] == 200
        first, again = receiver.requests
        assert first["body"] == again["body"] and json.loads(first["body"]) == as_first_run
        assert first["headers"]["Idempotency-Key"] == again["headers"]["Idempotency-Key"] == "execution-1:notify"
        assert first["headers"]["Content-Type"] == "application/json"
    finally:
        await receiver.close()
