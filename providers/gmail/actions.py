"""Gmail API: send email; a poll trigger for new messages matching a search."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, now_epoch, schema
from patchbay.providers._shared.polling import high_water_mark


async def send_email(client, inputs: dict[str, Any]) -> Any:
    message = EmailMessage()
    message["To"] = inputs["to"]
    if inputs.get("cc"):
        message["Cc"] = inputs["cc"]
    message["Subject"] = inputs["subject"]
    if inputs.get("html"):
        message.set_content(inputs["body"], subtype="html")
    else:
        message.set_content(inputs["body"])
    raw = base64.urlsafe_b64encode(message.as_bytes()).decode()
    return await call(client, "POST", "/gmail/v1/users/me/messages/send", json={"raw": raw})


def _header(message: dict[str, Any], name: str) -> str | None:
    for header in (message.get("payload") or {}).get("headers") or []:
        if str(header.get("name")).lower() == name.lower():
            return header.get("value")
    return None


async def _emails_after(client, config: dict[str, Any], cursor: int) -> list[dict[str, Any]]:
    """Messages matching ``config.query`` received after the cursor (epoch seconds)."""
    query = f"{config.get('query') or ''} after:{int(cursor)}".strip()
    listed = (await call(client, "GET", "/gmail/v1/users/me/messages", params={"q": query, "maxResults": 50}) or {}).get("messages") or []
    items = []
    for entry in listed:
        message = await call(client, "GET", f"/gmail/v1/users/me/messages/{entry['id']}", params={"format": "metadata", "metadataHeaders": "Subject,From,To"})
        items.append(
            {
                "id": message.get("id"),
                "threadId": message.get("threadId"),
                "snippet": message.get("snippet"),
                "subject": _header(message, "Subject"),
                "from": _header(message, "From"),
                "to": _header(message, "To"),
                "receivedAt": int(message.get("internalDate") or 0) // 1000,
            }
        )
    return items


poll_new_emails = high_water_mark(_emails_after, start=lambda client, config: now_epoch(), mark=lambda item: item["receivedAt"])


def actions() -> list[Action]:
    return [
        Action(
            name="send_email",
            display_name="Send email",
            run=send_email,
            description="Send an email from the connected mailbox.",
            docs_url="https://developers.google.com/gmail/api/v1/reference/users/messages/send",
            inputs=schema(("to", "subject", "body"), to="string", cc="string", subject="string", body="string", html="boolean"),
            scopes=("https://www.googleapis.com/auth/gmail.send",),
        )
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_email",
            display_name="New email",
            kind="poll",
            docs_url="https://developers.google.com/workspace/gmail/api/reference/rest/v1/users.messages/list",
            poll=poll_new_emails,
            config=schema(query="string"),
            description="A message matching a Gmail search arrived.",
            sample={"id": "m1", "subject": "Hello", "from": "a@example.com"},
        )
    ]
