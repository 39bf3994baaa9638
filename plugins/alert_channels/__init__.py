"""The built-in alert channels (spec 6.1): ``email`` over SMTP, ``webhook`` (a JSON POST of the
alert) and ``chat`` (an incoming-webhook message with the status emoji).

Two shapes of alert reach them: a flow alert (``flowId``, ``flowName``, ``executionId``, ``error``)
and an operator event (``summary``, ``workspaceId``, ``details``; see ``core/alerts/operator_events``).

Each channel's ``send(alert, target, context)`` delivers one alert and raises on failure, so the job
queue retries it. ``context`` carries the shared HTTP client (``http``), the SMTP settings (``smtp``:
host, port, username, password, sender, starttls, use_tls) and ``check(url)``.
"""

from __future__ import annotations

from typing import Any

from patchbay import hookimpl

EMOJI = {"flow.succeeded": "\u2705", "flow.failed": "\u274c"}
OPERATOR_EMOJI = "\u26a0\ufe0f"
FLOW_FIELDS = ("event", "timestamp", "flowId", "flowName", "error", "executionId")
OPERATOR_FIELDS = ("event", "timestamp", "workspaceId", "summary", "details")


class DeliveryFailed(RuntimeError):
    """The target refused or could not be reached; the queue tries again."""


def _is_flow(alert: dict[str, Any]) -> bool:
    return "flowId" in alert


def _headline(alert: dict[str, Any]) -> str:
    if not _is_flow(alert):
        return str(alert.get("summary") or alert.get("event"))
    outcome = "succeeded" if alert.get("event") == "flow.succeeded" else "failed"
    return f"Flow {alert.get('flowName') or alert.get('flowId')} {outcome}"


async def _post_json(context: Any, url: str, body: dict[str, Any]) -> None:
    context.check(url)
    # Redirects are not followed (a 3xx is a failure) and the answer's body is never read: the
    # target is tenant-controlled, and only its status matters.
    async with context.http.post(url, json=body, headers={"Accept-Encoding": "identity"}, allow_redirects=False) as response:
        if not 200 <= response.status < 300:
            raise DeliveryFailed(f"{url} answered {response.status}")


def _email_lines(alert: dict[str, Any]) -> list[str]:
    if not _is_flow(alert):
        lines = [
            _headline(alert) + ".",
            "",
            f"Event:     {alert.get('event')}",
            f"Workspace: {alert.get('workspaceId') or '(the deployment)'}",
            f"Time:      {alert.get('timestamp')}",
            "",
        ]
        return lines + [f"{key}: {value}" for key, value in (alert.get("details") or {}).items()]
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
    return lines


class EmailChannel:
    def configuration_problem(self, settings: Any) -> str | None:
        if not settings.smtp.host:
            return "the email channel needs an SMTP server: set [smtp] host (PATCHBAY_SMTP_HOST)"
        return None

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
        message.set_content("\n".join(_email_lines(alert)) + "\n")
        await aiosmtplib.send(
            message,
            hostname=smtp.host,
            port=smtp.port,
            username=smtp.username,
            password=smtp.password,
            start_tls=smtp.starttls,
            use_tls=smtp.use_tls,
            timeout=30,
        )


class WebhookChannel:
    async def send(self, alert: dict[str, Any], target: str, context: Any) -> None:
        body = {key: alert.get(key) for key in (FLOW_FIELDS if _is_flow(alert) else OPERATOR_FIELDS)}
        await _post_json(context, target, body)


class ChatChannel:
    async def send(self, alert: dict[str, Any], target: str, context: Any) -> None:
        if not _is_flow(alert):
            await _post_json(context, target, {"text": f"{OPERATOR_EMOJI} *{_headline(alert)}*\nEvent: {alert.get('event')}"})
            return
        text = f"{EMOJI.get(alert.get('event'), '')} *{_headline(alert)}*\nExecution: {alert.get('executionId')}"
        if alert.get("error"):
            text += f"\nError: {alert['error']}"
        await _post_json(context, target, {"text": text})


@hookimpl
def register_alert_channels(register):
    register("email", EmailChannel())
    register("webhook", WebhookChannel())
    register("chat", ChatChannel())
