"""The built-in plugin of declared actions and triggers (entry point ``declared`` in
``patchbay.plugins``): every ``providers/*/actions.toml``.

It defines no provider and adds to those the files name, listed in ``extends`` so that a file's
objects are skipped while its provider is not installed. Disabling the plugin
(``[plugins] disable = ["declared"]``) withdraws every declared action, trigger and webhook handler
at once.
"""

from patchbay import hookimpl
from patchbay.core.declared.loader import declarations
from patchbay.core.declared.objects import actions_of, triggers_of, webhook_handler

extends = tuple(provider for declaration in declarations() for provider in declaration.providers)


@hookimpl
def register_actions(register):
    for declaration in declarations():
        for provider in declaration.providers:
            for action in actions_of(declaration):
                register(provider, action)


@hookimpl
def register_triggers(register):
    for declaration in declarations():
        for provider in declaration.providers:
            for trigger in triggers_of(declaration):
                register(provider, trigger)


@hookimpl
def register_webhooks(register):
    for declaration in declarations():
        handler = webhook_handler(declaration)
        for provider in declaration.providers if handler is not None else ():
            register(provider, handler)
