"""The webhook tests' fixtures live in ``patchbay.core.webhooks.fixtures`` (shared with tests/leads)."""

from patchbay.core.webhooks.fixtures import fast_webhooks, graph, helpers, receivers, wh, wh_app  # noqa: F401
