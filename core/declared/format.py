"""The declared-actions format: one TOML file per provider, ``providers/<provider>/actions.toml``.

A file holds data only; :mod:`.loader` structures it into the classes below with cattrs (an unknown
key or a value of the wrong type is refused, naming the file and the key) and then checks what types
cannot say (JSON Schemas, JMESPath expressions, path placeholders, examples). :mod:`.runner` turns
the result into calls through the connection client. docs/provider-packs.md shows whole examples.

Values that name inputs (``query``, ``body``, ``input_headers``) are input names; ``fixed_query`` and ``fixed_body``
are constants. A ``body`` key is a path into the JSON body, dots nesting (``"fields.summary" =
"summary"`` sends ``{"fields": {"summary": <inputs.summary>}}``); a form body takes keys as they are.
An input that is not given is left out of the query and the body. Selectors (``select``, ``items``,
``item_id``, ``cursor``, ``next_cursor``, ``next_url``, ``event_type``, ``item``, ``token``) are JMESPath expressions; for a
GraphQL request (``Request.graphql``) they read the answer's ``data``.

Every key added later has a default that keeps the files written before it meaning what they meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


@attrs.frozen(kw_only=True)
class GraphQL:
    """A GraphQL operation sent as the JSON body ``{"query": document, "variables": {...}}``.
    ``document`` is fixed (it must parse and declare each variable given); ``variables`` maps a
    variable path (dots nest, as ``body`` keys do) to an input name, ``fixed_variables`` holds
    constants the inputs are placed over. The answer's ``data`` is what selectors read; a non-empty
    ``errors`` list in a 2xx answer is ``UpstreamFailed`` carrying the errors' messages."""

    document: str
    variables: Mapping[str, str] = attrs.field(factory=dict)  # variable path -> input name
    fixed_variables: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Request:
    """One HTTP call, relative to the provider's ``api_base_url``. ``path`` placeholders
    (``/repos/{owner}/{repo}``) are filled from the inputs, each percent-encoded as one segment.
    ``graphql`` makes the call a GraphQL operation (a POST whose body it builds: no ``body`` or
    ``fixed_body`` beside it)."""

    method: Method
    path: str
    query: Mapping[str, str] = attrs.field(factory=dict)  # query parameter -> input name
    fixed_query: Mapping[str, Any] = attrs.field(factory=dict)  # query parameter -> a string, integer or boolean
    headers: Mapping[str, str] = attrs.field(factory=dict)  # constant headers
    input_headers: Mapping[str, str] = attrs.field(factory=dict)  # header -> input name (Xero's xero-tenant-id)
    body: Mapping[str, str] = attrs.field(factory=dict)  # body key path -> input name
    fixed_body: Mapping[str, Any] = attrs.field(factory=dict)  # constant JSON, the inputs placed over it
    body_format: Literal["json", "form"] = "json"
    graphql: GraphQL | None = None


@attrs.frozen(kw_only=True)
class Pagination:
    """How to ask for the next page. ``cursor``: the next cursor is ``next_cursor`` of the answer,
    sent as the query parameter ``cursor_param`` (or at the body path ``cursor_body``); ``offset``:
    ``offset_param`` grows by the items received; ``page``: ``page_param`` counts from
    ``first_page``; ``link``: the ``Link`` header's ``rel="next"`` URL; ``next_url``: the URL the
    answer's ``next_url`` (JMESPath) names, absolute on the API's host (Microsoft Graph's
    ``@odata.nextLink``) or a path joined to the base URL like any path (Twilio's ``next_page_uri``), followed as it is
    with GET. ``size_param`` (with ``page_size``) asks for a page size; offset and page paging stop
    on a short page. Every style stops on an empty page and after ``max_pages``."""

    style: Literal["cursor", "offset", "page", "link", "next_url"]
    next_cursor: str | None = None
    next_url: str | None = None
    cursor_param: str | None = None
    cursor_body: str | None = None
    offset_param: str | None = None
    page_param: str | None = None
    first_page: int = 1
    size_param: str | None = None
    page_size: int = 100
    max_pages: int = 10


@attrs.frozen(kw_only=True)
class Errors:
    """Statuses that mean something the caller can act on: raised as ``NotFound``, ``Conflict``,
    ``RateLimited`` (with the answer's ``Retry-After``); any other non-2xx is ``UpstreamFailed``."""

    not_found: tuple[int, ...] = (404,)
    conflict: tuple[int, ...] = (409,)
    rate_limited: tuple[int, ...] = (429,)


@attrs.frozen(kw_only=True)
class Output:
    """``select`` picks the result out of the answer (the whole answer when unset; with pagination,
    each page's item list; a GraphQL answer's ``data``). ``schema``, when given, is what the selected ``sample`` must satisfy
    (checked by the tests, not at run time)."""

    select: str | None = None
    schema: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Action:
    """An operation. ``input`` is a JSON Schema object, ``example`` inputs it accepts, ``sample``
    the provider's documented answer to such a request (for GraphQL the whole response, ``{data = ...}``);
    ``docs`` the page documenting the call."""

    name: str
    title: str
    description: str = ""
    docs: str
    scopes: tuple[str, ...] = ()
    input: Mapping[str, Any]
    example: Mapping[str, Any]
    request: Request
    output: Output = Output()
    pagination: Pagination | None = None
    errors: Errors | None = None
    sample: Any


@attrs.frozen(kw_only=True)
class Trigger:
    """A poll trigger lists items with ``request`` (its inputs are the subscription's ``config``,
    described by the JSON Schema ``config`` and shown by ``example``), picks them with ``items``,
    keys them by ``item_id`` and keeps the highest ``cursor`` value as its high-water mark (sent as
    the query parameter ``cursor_param`` when set; items at or below it are dropped either way).
    A webhook trigger matches the provider's ``events`` (the file's ``[webhooks]`` says how they are
    verified and typed); ``item`` picks the object a flow receives from each event body. ``sample``
    is one item as the flow receives it; ``delivery``, when given, a whole documented body that
    carries one of the events (without it the tests build one from the selectors)."""

    name: str
    title: str
    description: str = ""
    docs: str
    kind: Literal["poll", "webhook"]
    config: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    example: Mapping[str, Any] = attrs.field(factory=dict)
    request: Request | None = None
    items: str | None = None
    item_id: str = "id"
    cursor: str | None = None
    cursor_param: str | None = None
    pagination: Pagination | None = None
    errors: Errors | None = None
    events: tuple[str, ...] = ()
    item: str | None = None
    sample: Mapping[str, Any]
    response: Any = None  # poll: the provider's documented answer to ``request`` (the tests serve it)
    delivery: Any = None  # webhook: a documented delivery body carrying one of ``events`` (the tests post it)


@attrs.frozen(kw_only=True)
class Verification:
    """How an inbound webhook proves it comes from the provider, under the deployment's
    ``webhook_secret``: ``hmac`` (``header`` carries ``prefix`` + the HMAC of the signed string in
    ``encoding``), ``token`` (``header`` carries the secret itself) or ``none``.

    The signed string is ``signed`` with ``{body}`` replaced by the raw body, ``{timestamp}`` by
    the request's timestamp, exactly as sent, and ``{url}`` by the deployment's public URL the delivery
    was posted to (the ``base_url`` setting, then the path and query as sent; never the Host header):
    ``"{body}"`` (the default), ``"{timestamp}.{body}"`` (Stripe, Calendly),
    ``"v0:{timestamp}:{body}"`` (Zoom, with ``prefix = "v0="``), ``"{body}{url}"`` (Trello). The timestamp is
    read from its own header, ``timestamp_header``, or from the signature header itself: with
    ``signature_key`` the header is a comma-separated list of ``key=value`` pairs
    (``t=1492774577,v1=5257a8...``) whose ``signature_key`` values are the signatures (any one may
    match, as during a secret roll) and whose ``timestamp_key`` value is the timestamp. A request
    whose timestamp (Unix seconds, or an ISO 8601 date-time) is more than ``tolerance`` seconds
    from now is refused, replays included."""

    scheme: Literal["hmac", "token", "none"]
    header: str | None = None
    algorithm: Literal["sha1", "sha256", "sha512"] = "sha256"
    encoding: Literal["hex", "base64"] = "hex"
    prefix: str = ""
    signed: str = "{body}"
    timestamp_header: str | None = None
    signature_key: str | None = None
    timestamp_key: str | None = None
    tolerance: int = 300


@attrs.frozen(kw_only=True)
class Handshake:
    """How the provider confirms an endpoint before it sends events, answered without storing
    anything:

    - ``echo_query`` (Dropbox): a ``GET`` carrying the query parameter ``name`` is answered with its
      value as ``text/plain`` (``X-Content-Type-Options: nosniff``);
    - ``echo_header`` (Asana's ``X-Hook-Secret``): a ``POST`` carrying the header ``name`` is
      answered 200 with the same header and value, and an empty body;
    - ``sign_token`` (Zoom's ``endpoint.url_validation``): a ``POST`` that passes ``verify`` and
      whose event type is ``event`` is answered with the JSON object ``{<name>: token,
      <signature_key>: hex HMAC-SHA256 of token under the webhook_secret}``, the token read from
      the body with ``token`` (JMESPath). It is verified first: answering an unsigned request would
      sign any string an attacker chose."""

    style: Literal["echo_query", "echo_header", "sign_token"]
    name: str
    event: str | None = None
    token: str | None = None
    signature_key: str | None = None


@attrs.frozen(kw_only=True)
class Webhooks:
    """The provider's inbound webhooks: ``events`` lists the events of one body (the body itself
    when unset), ``event_type`` and ``event_id`` read each event's type and id. A provider naming
    the type in a header instead (GitHub's ``X-GitHub-Event``, Shopify's ``X-Shopify-Topic``) sets
    ``event_type_header``: every event of the body then has that header's value as its type (read
    when the delivery is received and stored with it). ``handshake``: how an endpoint is confirmed."""

    docs: str
    verify: Verification
    event_type: str | None = None
    event_type_header: str | None = None
    event_id: str | None = None
    events: str | None = None
    handshake: Handshake | None = None


@attrs.frozen(kw_only=True)
class Declaration:
    """One file. ``provider`` names the catalog provider; ``also`` other providers with the same API
    under the same base URL (``github-pat`` beside ``github``). ``headers`` are sent on every call;
    ``errors`` is the default of every action and trigger."""

    provider: str
    also: tuple[str, ...] = ()
    headers: Mapping[str, str] = attrs.field(factory=dict)
    errors: Errors = Errors()
    webhooks: Webhooks | None = None
    actions: tuple[Action, ...] = ()
    triggers: tuple[Trigger, ...] = ()

    @property
    def providers(self) -> tuple[str, ...]:
        return (self.provider, *self.also)
