"""schemathesis' positive phases over the integrations routes: no server error, and every answer
matches the schema /openapi.json publishes, for the workspace's routes (its key) and the
deployment's (the operator's key)."""

from __future__ import annotations

import pytest

from patchbay.core.settings import AdminSettings
from tests.contract.conformance import Operations
from tests.contract.conftest import conformance, live_api, schemathesis, schemathesis_seconds  # noqa: F401

BUDGET_SECONDS = 120
OPERATOR_KEY = "operator-key-integrations"


@pytest.fixture
def make_app(make_app):
    def make(**overrides):
        return make_app(admin=AdminSettings(api_key=OPERATOR_KEY), **overrides)

    return make


@pytest.mark.slow  # schemathesis in a process of its own
async def test_the_integrations_routes_conform(conformance):
    deployment = Operations('include-path-regex = "^/connect/v1/deployment/"', {"path.providerType": "github"}, {"x-api-key": OPERATOR_KEY})
    text = await conformance(
        r"^/connect/v1/(deployment/)?integrations(/|$)", {"path.providerType": "github"}, [deployment], budget=BUDGET_SECONDS, max_examples=6
    )
    assert "integrations" in text
