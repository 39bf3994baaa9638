"""The proxy tests use the fixtures of tests/connections (the fake provider and its app)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("patchbay_tests_connections_conftest", Path(__file__).parent.parent / "connections" / "conftest.py")
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

fake_provider = _shared.fake_provider
fake, fake_app, api, ws = _shared.fake, _shared.fake_app, _shared.api, _shared.ws
