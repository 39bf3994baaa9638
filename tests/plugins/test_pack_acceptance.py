"""The acceptance suite of ``patchbay.testing`` run over built-in providers (each from the plugin
named like it, or its pack with behaviour), and shown to catch a pack that lies."""

import re
import subprocess
import sys

import pytest

from patchbay import hmac_sha256_hex
from patchbay.testing import pack_acceptance

TestHubspot = pack_acceptance("hubspot")


def stripe_signature(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    return {"Stripe-Signature": f"t={timestamp},v1={hmac_sha256_hex(secret, f'{timestamp}.'.encode() + body)}"}


TestStripe = pack_acceptance("stripe", webhook_signer=stripe_signature)
TestFacebook = pack_acceptance("facebook", pack="meta")
TestZendesk = pack_acceptance("zendesk")


LYING_PACK_TESTS = """
from patchbay import Action, Provider, ProviderAuth, Trigger, WebhookHandler, hookimpl
from patchbay.testing import pack_acceptance


class LyingPack:
    @hookimpl
    def register_providers(self):
        return [Provider(name="liar", display_name="Liar", category="crm", auth_mode="api_key", api_base_url="https://api.liar.test",
                         credential_headers={"x-api-key": "{api_key}"}, health_check="GET /me")]

    @hookimpl
    def register_auth(self, register):
        register("liar", LyingAuth())

    @hookimpl
    def register_webhooks(self, register):
        register("liar", TrustingWebhooks())

    @hookimpl
    def register_actions(self, register):
        # requires a field its schema does not have
        register("liar", Action(name="add", display_name="Add", run=add, inputs={"type": "object", "properties": {}, "required": ["email"]}))

    @hookimpl
    def register_triggers(self, register):
        register("liar", Trigger(name="everything", display_name="Everything", kind="poll", poll=replay_history))


async def add(client, inputs):
    return {}


async def replay_history(client, config, cursor):
    return [{"id": "old-1"}], "c1"  # a new trigger would replay what existed before it


class TrustingWebhooks(WebhookHandler):
    def verify(self, request, secret):
        return "x-liar-signature" in request.headers  # never checks the signature itself


class LyingAuth(ProviderAuth):
    def inject(self, provider, credentials, params):
        return {}, {"key": credentials["api_key"]}  # drops the declared header

    async def check(self, client):
        return True  # never refused


def sign(body, secret, timestamp):
    return {"x-liar-signature": f"{timestamp}.{secret}"}


TestLiar = pack_acceptance("liar", pack=None, plugins=[LyingPack()], webhook_signer=sign)
"""


@pytest.mark.slow  # a pytest process of its own
def test_suite_fails_a_pack_that_lies_without_any_pytest_settings(tmp_path):
    """Run as a pack's own tests are: a fresh folder, no ini file, the kit found by its entry point."""
    (tmp_path / "test_liar.py").write_text(LYING_PACK_TESTS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "test_liar.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    report = result.stdout
    assert result.returncode == 1, report
    # the in-process pack is not registered under the provider's name, the header is dropped, the
    # health check never refuses, any signature passes, an action's schema requires a field it does
    # not have and the first poll replays history: six rules broken, the other two kept
    failed = set(re.findall(r"FAILED test_liar.py::TestLiar::(\w+)", report))
    assert failed == {
        "test_definition_is_valid_and_comes_from_its_pack",
        "test_credential_is_injected_as_declared",
        "test_health_check_accepts_then_refuses_on_401",
        "test_webhook_verification",
        "test_action_inputs_are_valid_schemas",
        "test_first_poll_is_empty_with_a_cursor",
    }, report
