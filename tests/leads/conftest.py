"""The lead tests share the webhook tests' fixtures (``patchbay.providers.meta.fixtures``)."""

from patchbay.providers.meta.fixtures import fast_webhooks, graph, helpers, receivers, wh, wh_app  # noqa: F401
