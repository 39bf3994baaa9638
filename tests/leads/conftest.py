"""The lead tests share the webhook tests' fixtures (``patchbay.core.webhooks.fixtures``)."""

from patchbay.core.webhooks.fixtures import fast_webhooks, graph, helpers, receivers, wh, wh_app  # noqa: F401
