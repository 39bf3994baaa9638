"""Small self-contained HTML pages for browser-facing routes (OAuth connect results and prompts)."""

from __future__ import annotations

import html
from typing import Any

from aiohttp import web


def html_page(title: str, message: str, status: int = 200, *, form: dict[str, Any] | None = None) -> web.Response:
    """A page with a title and a message; ``form`` (``{action, fields, button}``) adds a POST form
    of hidden fields and one button."""
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(title) + "</title></head>"
        "<body style='font-family:sans-serif;max-width:36rem;margin:4rem auto'><h1>" + html.escape(title) + "</h1>"
        "<p>" + html.escape(message) + "</p>"
    )
    if form is not None:
        hidden = "".join(f"<input type='hidden' name='{html.escape(k)}' value='{html.escape(v)}'>" for k, v in form["fields"].items())
        body += f"<form method='post' action='{html.escape(form['action'])}'>{hidden}<button type='submit'>{html.escape(form['button'])}</button></form>"
    body += "</body></html>"
    return web.Response(text=body, content_type="text/html", status=status, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})
