"""Slack's provider pack: its actions and triggers (``actions``), its webhook verification
(``webhooks``), with its tests beside them (``pytest providers/slack``).

The definition comes from the catalog pack, which this pack ``extends``.
"""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.providers.slack import actions
from patchbay.providers.slack.webhooks import SlackWebhooks

NAME = "slack"
PROVIDERS = actions.PROVIDERS
extends = PROVIDERS


@hookimpl
def register_actions(register):
    for provider in PROVIDERS:
        for action in actions.actions():
            register(provider, action)


@hookimpl
def register_triggers(register):
    for provider in PROVIDERS:
        for trigger in actions.triggers():
            register(provider, trigger)


@hookimpl
def register_webhooks(register):
    register(NAME, SlackWebhooks())
