"""Fixtures of the integrations tests: ``serve_process(name, database_url)`` starts ``patchbay
serve`` in a subprocess on a free port (stopped after the test), with the operator's admin key
``OPERATOR_KEY`` and a shared secret key, so several processes can share one database."""

from __future__ import annotations

import pytest

from tests.serve_process import ServeProcess

OPERATOR_KEY = "operator-secret"
SECRET_KEY = "integrations-test-secret-key"


@pytest.fixture
def serve_process(tmp_path):
    """``serve_process(name, database_url)``: a started (not yet waited for) ``patchbay serve``."""
    started: list[ServeProcess] = []

    def start(name: str, database_url: str) -> ServeProcess:
        env = {"PATCHBAY_DATABASE_URL": database_url, "PATCHBAY_SECRET_KEY": SECRET_KEY, "PATCHBAY_ADMIN_API_KEY": OPERATOR_KEY}
        server = ServeProcess(tmp_path / name, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# the console's fixtures (a signed-in browser without JavaScript), for the console page's tests
from tests.console.conftest import browser, browser_tools, console_plugins, console_server, console_settings, make_person, sign_in  # noqa: E402, F401
