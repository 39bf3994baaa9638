"""A server or worker started by the CLI settles the garbage collector once it has started: start-up's
objects frozen, the young generation collected every ``YOUNG_GENERATION_THRESHOLD`` allocations.
``server_app`` builds that app, with extra packs beside the installed ones (the benchmarks' way to
run what ``serve`` runs)."""

from __future__ import annotations

import gc

from aiohttp import web

from patchbay import Provider, hookimpl
from patchbay.cli.main import server_app
from patchbay.cli.runtime import YOUNG_GENERATION_THRESHOLD
from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import load_settings


class _ExtraPack:
    @hookimpl
    def register_providers(self):
        return [Provider(name="gc-extra", display_name="GC extra", category="other", auth_mode="api_key", api_base_url="https://api.example.com")]


async def test_the_cli_app_freezes_what_start_up_built_and_collects_young_objects_less_often(tmp_path):
    settings = load_settings({}, {"PATCHBAY_DATA_DIR": str(tmp_path), "PATCHBAY_SECRET_KEY": "gc-test", "PATCHBAY_WORKERS": "0", "PATCHBAY_SCHEDULER": "false"})
    before = gc.get_threshold()
    app = server_app(settings, plugins=[_ExtraPack()])
    runner = web.AppRunner(app)
    try:
        await runner.setup()
        assert app[SERVICES].registry.provider("gc-extra") is not None
        assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > 0
    finally:
        await runner.cleanup()
        gc.unfreeze()
        gc.set_threshold(*before)
