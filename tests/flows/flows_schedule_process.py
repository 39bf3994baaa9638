"""One process of the two-process schedule test (run by test_flows_schedules.py, not collected).

Usage: python flows_schedule_process.py DATABASE_URL DATA_DIR NOW_ISO...
Waits for a line on stdin (so both processes start together), runs the ``run-schedules`` job once per
NOW_ISO and prints the number of executions it fired, as JSON.
"""

import asyncio
import json
import sys
from datetime import datetime

from patchbay.core.flows.schedules import run_schedules
from patchbay.core.services import build_services
from patchbay.core.settings import load_settings


async def main(url: str, data_dir: str, moments: list[str]) -> None:
    environ = {"PATCHBAY_DATABASE_URL": url, "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SECRET_KEY": "test-secret-key-0123456789", "PATCHBAY_SCHEDULER": "false"}
    services = build_services(load_settings({}, environ))  # no web application: the services stand alone
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    fired = 0
    for moment in moments:
        fired += (await run_schedules(services, now=datetime.fromisoformat(moment)))["fired"]
    await services.db.close()
    print(json.dumps({"fired": fired}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
