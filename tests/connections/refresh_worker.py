"""A separate process for the cross-process refresh test: builds its own app on the given database
(with the fake provider's pack) and refreshes one connection from 10 concurrent tasks, each holding
the stale token; prints the tokens it ended with as JSON.

    python refresh_worker.py <database url> <data dir> <fake base url> <workspace id> <connection id> <stale token>
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

from aiohttp import web

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.refresh import refresh_connection
from patchbay.core.settings import load_settings

_spec = importlib.util.spec_from_file_location("fake_provider", Path(__file__).with_name("fake_provider.py"))
fake_provider = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_provider)


async def main(database_url: str, data_dir: str, base: str, workspace_id: str, connection_id: str, stale: str) -> None:
    environ = {
        "PATCHBAY_SECRET_KEY": "test-secret-key-0123456789",
        "PATCHBAY_DATA_DIR": data_dir,
        "PATCHBAY_DATABASE_URL": database_url,
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
    }
    settings = load_settings({}, environ)
    settings.providers = fake_provider.provider_settings()
    app = create_app(settings, plugins=[fake_provider.FakePack(base)], background=False)
    runner = web.AppRunner(app)
    await runner.setup()  # opens the outbound client and the database
    try:
        states = await asyncio.gather(*(refresh_connection(app[SERVICES], connection_id, workspace_id=workspace_id, stale_token=stale) for _ in range(10)))
        print(json.dumps({"tokens": sorted({s.access_token for s in states})}))
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
