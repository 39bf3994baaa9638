"""The hook specifications: the public contract between patchbay and its plugins.

Every hook is synchronous and called with keyword arguments only. Apart from
``register_providers``, each hook receives a ``register`` callable and registers objects with it;
the core looks those objects up by key (usually a provider name) when it needs them, so no hook is
broadcast to every plugin on a request. Methods of registered objects may be coroutines; the core
awaits them. Registering two objects under one key is an error that names both plugins. Objects
keyed by a provider name must name an installed provider (a plugin lists providers of other packs it
adds to in a module attribute ``extends``, and is then skipped for those not installed); a hook
implementation whose name is no hook below is refused.

Each kind of registered object has a typed shape in the public facade: a base class
(``patchbay.ProviderAuth``, ``patchbay.WebhookHandler``, ``patchbay.PaymentProvider``), a record
(``patchbay.Action``, ``patchbay.Trigger``, ``patchbay.RecordSource``) or a protocol to implement
without subclassing (``patchbay.ProxyCustomizer``, ``CrmMapper``, ``AlertChannel``,
``CrmDestination``, ``FederatedLogin``, ``StepType``, ``DeauthorizationCallback``,
``DeletionCallback``; ``core/plugins/protocols.py``). The registry checks each object against it when
it loads: an object lacking a required method stops the start with an error naming the plugin.

Implement a hook with ``from patchbay import hookimpl``. Provider packs live in the entry-point group
``patchbay.providers``, every other plugin in ``patchbay.plugins``.
"""

from __future__ import annotations

import pluggy

PROJECT = "patchbay"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---------------------------------------------------------------------------------------------
# Provider packs
# ---------------------------------------------------------------------------------------------


@hookspec
def register_providers():
    """Return the provider definitions of this pack.

    :return: an iterable of :class:`patchbay.Provider`. Names are unique across every installed
        pack; a duplicate, or a definition that fails ``Provider.validate``, stops start-up with an
        error naming the pack.
    """


@hookspec
def register_auth(register):
    """Register custom authentication behaviour for providers whose OAuth or credential handling
    differs from what their definition says.

    :param register: ``register(provider_name, handler)``. The handler subclasses
        ``patchbay.ProviderAuth`` (``patchbay.core.connections.auth.ProviderAuth``, whose defaults
        do everything from the definition) and overrides what differs; ``ctx`` is an
        ``AuthContext`` (``provider``, ``http`` (an aiohttp session), ``app`` (the ``OAuthApp``:
        client_id, client_secret), ``params`` (connection parameters), ``url(template)``):

        - ``authorization_params(provider, *, params) -> dict``: extra query parameters of the
          authorization URL (``authorization_url(ctx, *, redirect_uri, state, scopes,
          code_challenge) -> str`` builds the whole URL);
        - ``exchange_code(ctx, *, code, redirect_uri, code_verifier)``, ``refresh(ctx,
          credentials)`` and ``client_credentials(ctx)``: coroutines returning a
          ``patchbay.TokenSet``; ``token_set(provider, body)`` reads a token response (override it
          to pick up extra fields, e.g. an instance URL into ``TokenSet.params``, naming such
          parameters in the class attribute ``learned_params``); raise
          ``patchbay.ProviderAuthError(message, error=...)``, ``error="invalid_grant"`` marking
          the connection invalid;
        - ``inject(provider, credentials, params) -> (headers, query)``: what carries the
          credential on a proxied call;
        - ``revoke(ctx, credentials)``: a coroutine revoking the credential at the provider on
          disconnect, answering whether it did (failures never block the disconnect);
        - ``check(client)``: a coroutine proving the credential works through a
          ``patchbay.ConnectionClient``: True, False (refused) or None (no cheap check).
    """


@hookspec
def register_proxy(register):
    """Register a proxy customisation for a provider.

    :param register: ``register(provider_name, customizer)``. The customizer's ``prepare(call)``
        may rewrite the outgoing call (``call.method``, ``call.url``, ``call.headers``,
        ``call.body``: bytes, text sent as UTF-8, or None; ``call.provider``, ``call.connection_id``
        and ``call.params`` are given)
        before it is sent; its ``retry_after(response)`` may return the seconds to wait when the
        provider signals a rate limit in a way its definition's ``retry_headers`` cannot describe
        (None: use the definition). Both are optional and synchronous.
    """


@hookspec
def register_webhooks(register):
    """Register how a provider's inbound webhooks are verified, attributed and read.

    :param register: ``register(provider_name, handler)``. The handler subclasses
        :class:`patchbay.WebhookHandler` (see its docstrings) and provides
        ``verify(request, secret)``: whether the raw body of the :class:`patchbay.InboundRequest`
        is authentic under the deployment's ``webhook_secret`` (a false answer is a 401 and nothing
        is stored); ``events(payload)``: the :class:`patchbay.InboundEvent` items a parsed body
        carries (each is routed and forwarded on its own); and optionally
        ``handshake(query, verify_token)`` (the text to echo on ``GET /webhook/{provider}``, default
        the ``hub.challenge`` scheme), ``challenge(request, secret)`` (a :class:`patchbay.WebhookReply`
        to a ``POST`` handshake such as Asana's ``X-Hook-Secret``, before verification),
        ``immediate_response(request)`` (an answer sent at once
        instead of storing, e.g. Slack's ``url_verification``), ``received_type(request)`` and
        ``typed_events(payload, received_type)`` (an event type named outside the body, stored at
        receipt), ``routing_keys(event)``
        (``(metadata_key, value)`` pairs matched against connection metadata to find the owning
        workspace), ``lead_ref(event)`` and ``fetch_lead(client, event)`` (the lead an event
        announces, read through the connection client as :class:`patchbay.LeadData`),
        ``list_leads(client, metadata, cursor)`` (one page of a lead import) and
        ``renew(client, metadata)`` (re-create the provider-side subscription, for the
        ``renew-webhook-subscriptions`` job). Methods may be coroutines.
    """


@hookspec
def register_actions(register):
    """Register the actions a provider offers to flows and to standalone execution.

    :param register: ``register(provider_name, action)``; ``action`` is a
        :class:`patchbay.Action` whose ``run(client, inputs)`` coroutine calls the provider through
        the connection client handed to it (``await client.request(method, path, params=, json=,
        data=, headers=)`` answers ``.status``, ``.json()``, ``.text``) and returns a
        JSON-serialisable result. ``inputs`` has been checked against the action's ``inputs`` JSON
        Schema (required fields, property types, enums); raising reports the message as a 502 (or
        fails the flow step). ``options`` maps an input field to ``(client) -> [{label, value}]``
        for ``GET /api/registry/actions/{provider.action}/options/{field}``.
    """


@hookspec
def register_triggers(register):
    """Register the triggers a provider offers to flows.

    :param register: ``register(provider_name, trigger)``; ``trigger`` is a
        :class:`patchbay.Trigger`. A webhook trigger names the inbound event types it matches
        (``event_types``; ``*`` matches all; none: the trigger's name). A poll trigger's
        ``poll(client, config, cursor)`` coroutine gets the connection client, the subscription's
        ``config`` and the cursor it returned last time (``None`` on the first poll) and returns
        ``(items, next_cursor)``, the cursor being JSON. Each item starts the flow once, keyed by
        ``item_id(item)`` (default: the item's ``id``), so returning an item twice is harmless.
        The built-in triggers answer no items on the first poll and only set the cursor ("new from
        now on").
    """


@hookspec
def register_record_sources(register):
    """Register how provider records are ingested by the data-sync job.

    :param register: ``register(provider_name, source)``; ``source`` is a
        :class:`patchbay.RecordSource` whose ``fetch(client, cursor)`` coroutine returns
        ``(records, next_cursor)`` for its ``resource_type``. ``cursor`` is ``None`` on the first
        run, then the last non-null ``next_cursor`` returned (any JSON value; stored per connection
        and resource type). Each record is a JSON object; its ``id`` makes a re-sync update the
        stored record instead of adding one. A run pages on while records come back and the cursor
        moves; ``next_cursor=None`` means "nothing more now" (the stored cursor is kept).
    """


@hookspec
def register_crm_mappers(register):
    """Register a provider's mapping onto the unified CRM model (contacts, companies, deals).

    :param register: ``register(provider_name, mapper)``; the mapper's ``list(client, resource,
        limit, cursor)`` and ``get(client, resource, id)`` coroutines read the provider through the
        connection client and return unified records. ``resource`` is ``contacts``, ``companies``
        or ``deals`` (an optional ``mapper.resources`` tuple narrows what it offers); ``id`` is the
        caller's item id already percent-encoded as one path segment (never ``.`` or ``..``), to
        paste into a path as it is; ``list``
        returns ``(records, next_cursor)`` where ``next_cursor`` is the provider's own paging token
        (any JSON value; ``None`` on the last page), ``get`` returns one record or ``None`` (404).
        Records are dicts with the fields of ``patchbay.core.unified_crm.models`` (missing ones
        become null); an exception (the CRM's error) answers 502 naming the provider.
    """


@hookspec
def register_deauthorization_callbacks(register):
    """Register how a provider's deauthorization callback (``POST /auth/{provider}/deauthorize``
    without the workspace's credentials) names the user who removed the app.

    :param register: ``register(provider_name, callback)``; ``callback.user(form, client_secret)``
        verifies the provider's request (the form it posted) under the deployment's OAuth client
        secret and returns the provider's user id, or None when it does not verify (answered 401).
        The connections whose metadata ``user_id`` is that user are disconnected. A provider nobody
        registers a callback for accepts only the workspace's own request (the ``meta`` pack reads
        Meta's ``signed_request``).
    """


@hookspec
def register_deletion_identities(register):
    """Register how a data deletion callback names the user to delete.

    :param register: ``register(source, identity_providers)``: a deletion request from ``source``
        (``meta``: Meta's data deletion callback, whose ``signed_request`` carries the app-scoped
        user id) names its user by the subject of a federated identity from one of
        ``identity_providers``, a tuple of ``[federation.<name>]`` names. The built-in ``users``
        eraser deletes the users holding such an identity; a source nobody registers deletes no
        user. Keyed by source, so a second registration of one source is an error.
    """


@hookspec
def register_deletion_callbacks(register):
    """Register a provider's data deletion callback, which ``POST /compliance/data-deletion`` accepts.

    :param register: ``register(source, callback)``. ``callback.field`` names the body field (form
        or JSON) carrying the provider's request (the ``meta`` pack: ``signed_request``). When a
        request sets it, the core calls ``callback.subject(value, ctx)``, which verifies the value
        and returns the subject whose data is deleted (recorded with ``source``;
        ``register_deletion_identities`` says whose federated identity it is), or raises
        ``patchbay.DeletionCallbackError``, answered 400 with its message. ``ctx`` is a
        ``patchbay.DeletionContext``: ``config``, the settings section named like the source
        (``register_settings``) or None, and ``compliance``, the core ``[compliance]`` section. A
        request whose field no installed pack reads is refused with 400 naming the field. Keyed by
        source, so a second registration of one source is an error.
    """


# ---------------------------------------------------------------------------------------------
# Other plugins
# ---------------------------------------------------------------------------------------------


@hookspec
def register_alert_channels(register):
    """Register a channel that delivers flow alerts.

    :param register: ``register(channel_name, channel)``; ``channel.send(alert, target, context)``
        is a coroutine that delivers one alert to one target and raises on failure so the job queue
        retries it (5 attempts, growing waits). ``alert`` holds the fields of spec 6.1: ``event``
        (``flow.failed`` or ``flow.succeeded``), ``timestamp``, ``flowId``, ``flowName``, ``error``,
        ``executionId``; ``target`` is the subscription's target; ``context`` has ``http`` (the shared
        aiohttp client session), ``smtp`` (the ``[smtp]`` settings: host, port, username, password,
        sender, starttls, use_tls) and ``check(url)``, which raises ``ValueError`` for a URL that is
        not an allowed outbound target. The channel name is what ``POST /connect/v1/alerts`` accepts
        as ``channel``; the built-in ``email``, ``webhook`` and ``chat`` use this same hook.
        A channel may also have ``configuration_problem(settings) -> str | None``: why it cannot
        deliver with this deployment's settings (``email`` without ``[smtp] host``), or ``None``;
        a subscription to such a channel is refused with that reason instead of failing later.
    """


@hookspec
def register_crm_destinations(register):
    """Register a CRM destination that leads are pushed to.

    :param register: ``register(provider_name, destination)``: leads of a workspace are pushed to
        each of its connections of that provider. ``destination.push(client, lead)`` is a coroutine
        that creates or updates the lead in the CRM through the connection client and returns the
        CRM's record id (raise to record a failed sync, which ``retry-failed-syncs`` retries);
        ``lead`` is a dict with ``id``, ``provider``, ``externalId``, ``formId``, ``email``,
        ``phone``, ``firstName``, ``lastName``, ``fullName``, ``customFields``, ``capturedAt``.
        ``destination.test(client)`` proves the connection works (raise when it does not).
    """


@hookspec
def register_payment_providers(register):
    """Register the payment provider behind billing.

    :param register: ``register(name, provider)``; ``provider`` is a :class:`patchbay.PaymentProvider`
        (see ``core/billing/payments.py``): ``configured(ctx)``, ``price_configured(ctx, plan)``, the
        coroutines ``create_checkout(ctx, request)``, ``create_portal(ctx, customer_id=, return_url=)``,
        ``cancel_subscription(ctx, subscription_id=)`` (at period end) and
        ``resume_subscription(ctx, subscription_id=)``, and ``parse_webhook(ctx, payload=, signature=)``
        which verifies the raw body against ``provider.signature_header`` and returns a
        :class:`patchbay.PaymentEvent` or raises :class:`patchbay.WebhookVerificationError`. ``ctx`` is a
        :class:`patchbay.PaymentContext` (the shared HTTP client and the settings section named like the
        provider). The first configured provider, by name, serves billing.
    """


@hookspec
def register_federated_login(register):
    """Register a federated login protocol for the identity provider's ``idp`` hint.

    :param register: ``register(protocol_name, protocol)``; the protocol builds the upstream
        authorization URL and completes the callback, returning the upstream user's claims.

    A ``[federation.<name>]`` table picks its protocol with ``protocol = "<protocol_name>"``
    (default ``"oidc"``, the built-in ``patchbay.plugins.federation``). The protocol object has two
    coroutines, called with keyword arguments; ``config`` is the provider's table and ``http`` the
    shared ``aiohttp.ClientSession``:

    - ``authorization_url(*, config, http, redirect_uri, state, nonce, code_challenge) -> str``:
      where to send the browser (PKCE S256 with ``code_challenge``).
    - ``complete(*, config, http, redirect_uri, code, code_verifier, nonce) -> dict``: exchange the
      code and return the verified claims of the upstream user (``sub`` required; ``email``,
      ``email_verified``, ``name``, ``given_name``, ``family_name``, ``picture`` used when present).
      Raise any exception to refuse the login.
    """


@hookspec
def register_settings(register):
    """Declare this plugin's own settings section.

    :param register: ``register(section, cls)``; ``cls`` is a pydantic model, a dataclass or an
        attrs class (keyword-only fields, each with a default) filled from the settings file's
        ``[section]`` table and the variables ``PATCHBAY_<SECTION>_<FIELD>``, like a core section:
        pydantic reads every value as its field's type (``core.settings.load_section``). An unknown key, a bad value, a table no
        loaded plugin declares, and a section named like a core setting stop the start, naming the
        table. The plugin reads its section from the context the core hands it (a payment
        provider's ``PaymentContext.config`` is the section named like the provider).
    """


@hookspec
def register_flow_templates(register):
    """Register system flow templates (spec 2.6), offered to every workspace.

    :param register: ``register(slug, template)``; ``template`` is made with
        ``patchbay.flow_template(slug, name, category, description, (provider, trigger, kind),
        steps)`` (``patchbay.action_step`` makes an action step bound to the workspace's connection
        at clone time). A template is seeded only while every provider it uses (its trigger's and
        its action steps') is installed. Keyed by slug, so a second registration of one slug is an
        error. A built-in pack registers the templates its triggers start.
    """


@hookspec
def register_step_types(register):
    """Register a flow step type beyond the built-in ones.

    :param register: ``register(type_name, step)``; ``step.run(context, config)`` is a coroutine
        receiving the rendered step configuration (every template already rendered, without ``id``,
        ``type`` and ``timeoutSeconds``) and returning the step's JSON-serialisable output; raising
        fails the step with the exception's message. ``context`` has ``workspace_id``, ``flow_id``,
        ``execution_id``, ``trigger`` (the payload), ``steps`` (earlier steps' ``output``) and
        ``test`` (a test run). Optional: ``prepare(config)`` adjusts the raw configuration before it
        is rendered; ``side_effects = False`` tells the engine the step may be repeated after a
        crash (by default the execution is checkpointed after the step so it is never repeated);
        ``config_schema`` (a JSON Schema of the step's keys but ``id``, ``type``, ``name``,
        ``timeoutSeconds``, ``onError`` and ``gotoLimit``) is checked at create, update and publish
        and shown by ``GET /connect/v1/flows/step-types``; ``title`` names the type there.
    """
