"""Every typed key of the application's and the request's state, declared once."""

from __future__ import annotations

import jinja2
from aiohttp import web

SERVICES = web.AppKey("services", "Services")  # patchbay.core.services: what every service needs
#: error shapes other than the connect API's, by path prefix (patchbay.core.http.errors.register_error_format)
ERROR_FORMATS = web.AppKey("error_formats", list)
#: headers set on answers by path (patchbay.core.http.pipeline.register_answer_headers)
ANSWER_HEADERS = web.AppKey("answer_headers", list)

#: the templates of the hosted connect page (patchbay.core.connect_ui.pages)
CONNECT_UI_JINJA = web.AppKey("connect_ui_jinja", jinja2.Environment)
#: the console's templates and its nav (patchbay.core.console.pages)
CONSOLE_JINJA = web.AppKey("console_jinja", jinja2.Environment)
CONSOLE_NAV = web.AppKey("console_nav", list)
#: the API reference page's templates and its page, rendered once (patchbay.core.http.api_docs)
API_DOCS_JINJA = web.AppKey("api_docs_jinja", jinja2.Environment)
API_DOCS = web.AppKey("api_docs", object)

PRINCIPAL = web.RequestKey("principal", object)  # Principal | None once authenticated
REQUEST_ID = web.RequestKey("request_id", str)
IDP_SESSION = web.RequestKey("idp_session", object)  # LiveSession | None once the cookie is looked up
CONSOLE_PERSON = web.RequestKey("console_person", object)  # console.service.Person | None once looked up
