"""The pack acceptance suite: ``TestAcme = pack_acceptance("acme")`` in a pack's tests.

This part checks what every provider must satisfy, data-only or not: the definition is valid and
comes from the pack named like the provider (or ``pack=``), its capabilities say what is registered,
a call carries the credential as the pack injects it (the definition's declared headers and query
among it), the health check answers True and then False on 401, each action's inputs are a valid
JSON Schema, each poll trigger's first poll is empty with a cursor, and the provider is served by
the registry routes.

For a provider with declared actions and triggers (``providers/<provider>/actions.toml``) it also
runs each of them against the fake (``patchbay.testing.declared``): every action's request and
output, its input schema's example and refusals, every poll trigger against its documented
response, every webhook trigger's signed delivery and the declared handshake.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable

import pytest
import pytest_asyncio

from patchbay.testing.declared import (
    WEBHOOK_SECRET,
    check_declared_actions,
    check_declared_inputs,
    check_declared_polls,
    check_declared_webhooks,
    declaration_of,
)
from patchbay.testing.fakes import FakeProviderAPI
from patchbay.testing.plugin import PackHarness, serve_pack


def check_definition(harness: PackHarness, pack: str) -> None:
    """The definition is valid and comes from ``pack``."""
    harness.provider.validate()
    assert harness.registry.provider_pack[harness.provider_name] == pack


def check_capabilities(harness: PackHarness) -> None:
    """The derived capabilities say exactly what is registered."""
    from patchbay.core.plugins.registry import DERIVED_CAPABILITIES

    capabilities = set(harness.provider.capabilities)
    for kind, capability in DERIVED_CAPABILITIES.items():
        assert (capability in capabilities) == bool(harness.registry.get(kind, harness.provider_name)), capability
    assert ("webhook_receive" in capabilities) == harness.provider.webhooks


async def check_injection(harness: PackHarness) -> None:
    """A call carries the credential as the pack injects it, declared headers and query included."""
    from patchbay.testing.plugin import TEST_CREDENTIALS

    client = await harness.client()
    await client.request("GET", "/patchbay-acceptance")
    sent = harness.fake.requests[-1]
    headers, query = harness.auth.inject(harness.provider, TEST_CREDENTIALS, client.params)
    assert set(harness.provider.credential_headers) <= set(headers)
    assert set(harness.provider.credential_query) <= set(query)
    assert headers or query or harness.provider.auth_mode == "none", "no credential is carried"
    for name, value in headers.items():
        assert sent.headers.get(name) == value, name
    for name, value in query.items():
        assert sent.query.get(name) == value, name


async def check_health(harness: PackHarness) -> bool:
    """The health check answers True, then False once the API answers 401; False when the
    definition declares none."""
    if not harness.provider.health_check:
        return False
    client = await harness.client()
    harness.fake.forced = None
    assert await harness.auth.check(client) is True
    harness.fake.answer_all(401, {"error": "unauthorized"})
    try:
        assert await harness.auth.check(client) is False
    finally:
        harness.fake.forced = None
    return True


def check_action_schemas(harness: PackHarness) -> int:
    """Every action registered for the provider has a valid JSON Schema object as its inputs,
    whose required names are among its properties; the number of actions checked."""
    validators = pytest.importorskip("jsonschema.validators")
    actions = harness.registry.get("actions", harness.provider_name) or {}
    for name, action in actions.items():
        schema = dict(action.inputs or {"type": "object"})
        validators.validator_for(schema).check_schema(schema)
        assert schema.get("type") == "object", f"action {name}: inputs must describe an object"
        missing = set(schema.get("required") or ()) - set(schema.get("properties") or {})
        assert not missing, f"action {name}: required {sorted(missing)} not among its properties"
    return len(actions)


def _sample_config(trigger) -> dict:
    """A config holding a placeholder for each required field of the trigger's config schema."""
    return {field: "acceptance" for field in (trigger.config or {}).get("required") or ()}


async def check_first_polls(harness: PackHarness) -> int:
    """Every poll trigger's first poll returns no items and a cursor, so a new trigger does not
    replay history; the number of poll triggers checked."""
    triggers = [t for t in (harness.registry.get("triggers", harness.provider_name) or {}).values() if t.kind == "poll"]
    client = await harness.client() if triggers else None
    declaration = declaration_of(harness.provider_name)
    documented = {t.name: t.response for t in declaration.triggers if t.kind == "poll"} if declaration is not None else {}
    for trigger in triggers:
        assert trigger.poll is not None, f"poll trigger {trigger.name} has no poll function"
        harness.fake.default = (200, documented[trigger.name]) if trigger.name in documented else (200, {})  # a declared one answers as documented
        try:
            items, cursor = await trigger.poll(client, _sample_config(trigger), None)
        finally:
            harness.fake.default = (200, {})
        assert items == [] and cursor is not None, f"trigger {trigger.name}: first poll answered {items!r}, cursor {cursor!r}"
    return len(triggers)


#: ``sign(body, secret, timestamp) -> headers``: how a provider signs a webhook delivery
WebhookSigner = Callable[[bytes, str, int], dict[str, str]]


async def check_webhook_verification(harness: PackHarness, sign: WebhookSigner, *, timestamped: bool = True) -> None:
    """The registered webhook handler accepts a signed delivery and refuses a tampered body, a
    wrong secret, a missing signature and (``timestamped``) a delivery an hour old."""
    from multidict import CIMultiDict

    from patchbay import InboundRequest

    handler = harness.registry.get("webhooks", harness.provider_name)
    assert handler is not None, f"no webhook handler is registered for {harness.provider_name!r}"
    secret, body, now = "acceptance-webhook-secret", b'{"acceptance": true}', int(time.time())
    url = f"https://patchbay.test/webhook/{harness.provider_name}"

    async def verifies(headers: dict[str, str], payload: bytes, key: str) -> bool:
        request = InboundRequest(method="POST", url=url, headers=CIMultiDict(headers), query={}, body=payload)
        answer = handler.verify(request, key)
        return bool(await answer if inspect.isawaitable(answer) else answer)

    assert await verifies(sign(body, secret, now), body, secret), "a signed delivery is refused"
    assert not await verifies(sign(body, secret, now), body + b" ", secret), "a tampered body is accepted"
    assert not await verifies(sign(body, "another-secret", now), body, secret), "a wrong secret is accepted"
    assert not await verifies({}, body, secret), "a delivery without signature is accepted"
    if timestamped:
        assert not await verifies(sign(body, secret, now - 3600), body, secret), "a stale delivery is accepted"


class DeclaredAcceptance:
    """The checks of a provider's declared actions and triggers (``patchbay.testing.declared``),
    part of the suite's class only for a provider that a declared file names."""

    async def test_declared_actions_call_the_provider_as_declared(self, harness):
        if not await check_declared_actions(harness, declaration_of(harness.provider_name)):
            pytest.skip(f"{harness.provider_name} declares no actions")

    async def test_declared_inputs_accept_the_example_and_refuse_wrong_types(self, harness):
        if not await check_declared_inputs(harness, declaration_of(harness.provider_name)):
            pytest.skip(f"{harness.provider_name} declares no action with a typed input")

    async def test_declared_poll_triggers_poll_their_documented_response(self, harness):
        if not await check_declared_polls(harness, declaration_of(harness.provider_name)):
            pytest.skip(f"{harness.provider_name} declares no poll triggers")

    async def test_declared_webhook_triggers_verify_and_read_their_deliveries(self, harness):
        if not await check_declared_webhooks(harness, declaration_of(harness.provider_name)):
            pytest.skip(f"{harness.provider_name} declares no webhook triggers")


def pack_acceptance(
    provider_name: str, *, pack: str | None = None, plugins=(), webhook_signer: WebhookSigner | None = None, webhook_timestamped: bool = True
) -> type:
    """A test class checking ``provider_name`` against the acceptance rules; ``pack`` is the
    plugin (entry-point name) expected to define it, by default the provider's own name;
    ``plugins`` are registered in-process beside the installed ones; ``webhook_signer`` signs a
    delivery the way the provider does (the webhook checks are skipped without it;
    ``webhook_timestamped=False`` for schemes without a timestamp)."""
    expected_pack = pack or provider_name
    declared = declaration_of(provider_name)

    @pytest.mark.asyncio(loop_scope="class")
    class PackAcceptance(*((DeclaredAcceptance,) if declared is not None else ())):
        """One app for the class: the checks read it (the health check puts the fake back)."""

        @pytest_asyncio.fixture(scope="class", loop_scope="class")
        @classmethod
        async def harness(cls, tmp_path_factory) -> PackHarness:
            fake = await FakeProviderAPI().start()
            overrides = {"webhook_secret": WEBHOOK_SECRET} if declared is not None and declared.webhooks is not None else None
            try:
                async with serve_pack(
                    provider_name, fake, tmp_path_factory.mktemp(f"acceptance-{provider_name}"), plugins=plugins, overrides=overrides
                ) as harness:
                    yield harness
            finally:
                await fake.close()

        async def test_definition_is_valid_and_comes_from_its_pack(self, harness):
            check_definition(harness, expected_pack)

        async def test_capabilities_say_what_is_registered(self, harness):
            check_capabilities(harness)

        async def test_credential_is_injected_as_declared(self, harness):
            await check_injection(harness)

        async def test_health_check_accepts_then_refuses_on_401(self, harness):
            if not await check_health(harness):
                pytest.skip(f"{provider_name} declares no health check")

        async def test_action_inputs_are_valid_schemas(self, harness):
            if not check_action_schemas(harness):
                pytest.skip(f"{provider_name} registers no actions")

        async def test_first_poll_is_empty_with_a_cursor(self, harness):
            if not await check_first_polls(harness):
                pytest.skip(f"{provider_name} registers no poll triggers")

        async def test_webhook_verification(self, harness):
            if harness.registry.get("webhooks", provider_name) is None:
                pytest.skip(f"{provider_name} registers no webhook handler")
            if webhook_signer is None:
                pytest.skip("no webhook_signer given to pack_acceptance")
            await check_webhook_verification(harness, webhook_signer, timestamped=webhook_timestamped)

        async def test_served_by_the_registry_routes(self, harness):
            response = await harness.http.get(f"/connect/v1/providers/{provider_name}", headers=harness.workspace["headers"])
            assert response.status == 200
            body = await response.json()
            assert body["name"] == provider_name and sorted(body["capabilities"]) == sorted(harness.provider.capabilities)

    PackAcceptance.__name__ = PackAcceptance.__qualname__ = f"PackAcceptance_{provider_name}"
    return PackAcceptance
