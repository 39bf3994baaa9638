"""The webhook tests' fixtures live in ``patchbay.providers.meta.fixtures`` (shared with tests/leads)."""

from patchbay.providers.meta.fixtures import fast_webhooks, graph, helpers, receivers, wh, wh_app  # noqa: F401
