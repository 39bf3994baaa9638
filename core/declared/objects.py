"""A declaration as the objects the hooks register: ``patchbay.Action``, ``patchbay.Trigger`` and,
for a file with ``[webhooks]``, a :class:`~.webhooks.DeclaredWebhooks`."""

from __future__ import annotations

from patchbay.core.declared.format import Declaration
from patchbay.core.declared.runner import action_runner, item_key, poller
from patchbay.core.declared.webhooks import DeclaredWebhooks
from patchbay.core.plugins.types import Action, Trigger


def actions_of(declaration: Declaration) -> list[Action]:
    return [
        Action(
            name=action.name,
            display_name=action.title,
            description=action.description,
            run=action_runner(declaration, action),
            inputs=action.input,
            scopes=action.scopes,
            output=action.output.schema,
            docs_url=action.docs,
        )
        for action in declaration.actions
    ]


def triggers_of(declaration: Declaration) -> list[Trigger]:
    found = []
    for trigger in declaration.triggers:
        common = {"name": trigger.name, "display_name": trigger.title, "description": trigger.description, "sample": trigger.sample, "docs_url": trigger.docs}
        if trigger.kind == "poll":
            found.append(Trigger(kind="poll", poll=poller(declaration, trigger), item_id=item_key(trigger), config=trigger.config, **common))
        else:
            found.append(Trigger(kind="webhook", event_types=trigger.events, **common))
    return found


def webhook_handler(declaration: Declaration) -> DeclaredWebhooks | None:
    if declaration.webhooks is None:
        return None
    items = {event: trigger.item for trigger in declaration.triggers if trigger.kind == "webhook" for event in trigger.events}
    return DeclaredWebhooks(declaration.webhooks, items)
