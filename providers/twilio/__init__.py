"""Twilio's provider pack. Its actions are declared data (``actions.toml``, the Message resource); the code
is what data cannot say: the webhook scheme (``webhooks``: X-Twilio-Signature over the URL and the sorted form
parameters, the body a form rather than JSON) and the incoming message trigger it feeds (``triggers``), with
their tests beside them (``pytest providers/twilio``).

Setting it up: ``webhook_secret`` of ``[providers.twilio]`` is the account's Auth Token, and the number's (or
Messaging Service's) incoming message webhook is ``<base_url>/webhook/twilio`` with HTTP POST. Twilio signs the
URL it calls, and patchbay checks the signature against its own public URL, the ``base_url`` setting, never
the Host header of the request: behind a proxy or another name, ``base_url`` must be the URL given to Twilio
(scheme, host, port and any path prefix), or every delivery is refused. Add ``?connectionId=<id>`` to route a
number's messages to one connection; without it they go to the connection whose metadata ``account_sid`` is
the message's AccountSid.

Its providers (``PROVIDERS``) are defined by the catalog data; the build reads ``PROVIDERS`` to leave them out
of the generated data-only entry points.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers._shared.pack import definitions_hook, trigger_hook
from patchbay.providers.twilio import triggers
from patchbay.providers.twilio.webhooks import TwilioWebhooks

NAME = "twilio"
PROVIDERS = ("twilio",)


register_providers = definitions_hook(PROVIDERS)
register_triggers = trigger_hook(PROVIDERS, triggers)


@hookimpl
def register_webhooks(register):
    register(NAME, TwilioWebhooks())
