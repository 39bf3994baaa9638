"""Slack Web API: post messages; the Events API ``message`` event as a webhook trigger."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import ProviderError, call, compact, schema


async def _slack(client, method: str, path: str, **kwargs: Any) -> Any:
    body = await call(client, method, path, **kwargs)
    if isinstance(body, dict) and body.get("ok") is False:  # Slack answers 200 with ok=false
        raise ProviderError(f"slack {path}: {body.get('error')}")
    return body


async def send_message(client, inputs: dict[str, Any]) -> Any:
    message = compact({k: inputs.get(k) for k in ("channel", "text", "blocks", "thread_ts")})
    body = await _slack(client, "POST", "/chat.postMessage", json=message)
    return {"channel": body.get("channel"), "ts": body.get("ts")}


async def channel_options(client) -> list[dict[str, Any]]:
    body = await _slack(client, "GET", "/conversations.list", params={"limit": 200, "exclude_archived": True})
    return [{"label": f"#{c.get('name')}", "value": c.get("id")} for c in body.get("channels") or []]


def actions() -> list[Action]:
    return [
        Action(
            name="send_message",
            display_name="Send message",
            run=send_message,
            description="Post a message to a channel.",
            docs_url="https://api.slack.com/methods/chat.postMessage",
            inputs=schema(("channel", "text"), channel="string", text="string", blocks="array", thread_ts="string"),
            scopes=("chat:write",),
            options={"channel": channel_options},
        )
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="message",
            display_name="New message",
            kind="webhook",
            docs_url="https://api.slack.com/events/message",
            event_types=("message",),
            description="A message was posted in a channel the app is in (Events API).",
            sample={"event": {"type": "message", "channel": "C1", "user": "U1", "text": "hi", "ts": "1.0"}},
        )
    ]
