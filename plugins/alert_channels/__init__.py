"""The built-in alert channels (spec 6.1): ``email`` over SMTP, ``webhook`` (a JSON POST of the
alert) and ``chat`` (an incoming-webhook message with the status emoji).

Each channel's ``send(alert, target, context)`` delivers one alert and raises on failure, so the job
queue retries it. ``context`` carries the shared HTTP client (``http``), the SMTP settings (``smtp``:
host, port, username, password, sender, starttls, use_tls) and ``check(url)``.
"""

from __future__ import annotations

from typing import Any

from patchbay import hookimpl

EMOJI = {"flow.succeeded": "\u2705", "flow.failed": "\u274c"}


class DeliveryFailed(RuntimeError):
    """The target refused or could not be reached; the queue tries again."""


def _headline(alert: dict[str, Any]) -> str:
    outcome = "succeeded" if alert.get("event") == "flow.succeeded" else "failed"
    return f"Flow {alert.get('flowName') or alert.get('flowId')} {outcome}"


async def _post_json(context: Any, url: str, body: dict[str, Any]) -> None:
    context.check(url)
    async with context.http.post(url, json=body, headers={"Accept-Encoding": "identity"}) as response:
        await response.read()
        if not 200 <= response.status < 300:
            raise DeliveryFailed(f"{url} answered {response.status}")


class EmailChannel:
    async def send(self, alert: dict[str, Any], target: str, context: Any) -> None:
        from email.message import EmailMessage

        import aiosmtplib

        smtp = context.smtp
        if not smtp.host:
            raise DeliveryFailed("SMTP is not configured ([smtp] host)")
        message = EmailMessage()
        message["From"] = smtp.sender
        message["To"] = target
        message["Subject"] = f"[patchbay] {_headline(alert)}"
        lines = [
            _headline(alert) + ".",
            "",
            f"Event:     {alert.get('event')}",
            f"Flow:      {alert.get('flowName')} ({alert.get('flowId')})",
            f"Execution: {alert.get('executionId')}",
            f"Time:      {alert.get('timestamp')}",
        ]
        if alert.get("error"):
            lines += ["", "Error:", str(alert["error"])]
        message.set_content("\n".join(lines) + "\n")
        await aiosmtplib.send(
            message, hostname=smtp.host, port=smtp.port, username=smtp.username, password=smtp.password,
            start_tls=smtp.starttls, use_tls=smtp.use_tls, timeout=30,
        )  # fmt: skip


class WebhookChannel:
    async def send(self, alert: dict[str, Any], target: str, context: Any) -> None:
        body = {key: alert.get(key) for key in ("event", "timestamp", "flowId", "flowName", "error", "executionId")}
        await _post_json(context, target, body)


class ChatChannel:
    async def send(self, alert: dict[str, Any], target: str, context: Any) -> None:
        text = f"{EMOJI.get(alert.get('event'), '')} *{_headline(alert)}*\nExecution: {alert.get('executionId')}"
        if alert.get("error"):
            text += f"\nError: {alert['error']}"
        await _post_json(context, target, {"text": text})


@hookimpl
def register_alert_channels(register):
    register("email", EmailChannel())
    register("webhook", WebhookChannel())
    register("chat", ChatChannel())
