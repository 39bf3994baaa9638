"""A worker process for the crash test (run by test_flows_crash.py, not collected).

Usage: python flows_crash_worker.py DATABASE_URL DATA_DIR
Runs the job workers of the services (no web application) with a 2-second lease. Its ``test.block`` step type blocks for an
hour while FLOWS_BLOCK=1, so the test can kill the process in the middle of an execution.
"""

import asyncio
import os
import sys

from patchbay import hookimpl
from patchbay.core.jobs.worker import background_work
from patchbay.core.services import build_services
from patchbay.core.settings import load_settings


class BlockingStep:
    side_effects = False

    async def run(self, context, config):
        if os.environ.get("FLOWS_BLOCK") == "1":
            await asyncio.sleep(3600)
        return {"blocked": False}


class BlockPlugin:
    @hookimpl
    def register_step_types(self, register):
        register("test.block", BlockingStep())


async def main(url: str, data_dir: str) -> None:
    environ = {
        "PATCHBAY_DATABASE_URL": url,
        "PATCHBAY_DATA_DIR": data_dir,
        "PATCHBAY_SECRET_KEY": "test-secret-key-0123456789",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_WORKERS": "4",
    }
    services = build_services(load_settings({}, environ), plugins=[BlockPlugin()])
    services.jobs.lease_seconds = 2
    async with services.running(), background_work(services):
        print("ready", flush=True)
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
