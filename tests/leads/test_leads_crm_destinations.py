"""The generic CRM destination posts the lead to the connection's URL (``patchbay.testing.FakeClient`` here);
the destinations of named CRMs are tested in their packs (providers/<name>/tests)."""

from __future__ import annotations

import pytest

from patchbay.plugins.crm_destinations import GenericWebhookDestination
from patchbay.testing import FakeClient, sample_lead


async def test_generic_webhook_posts_the_lead_and_errors_raise():
    client = FakeClient((200, {"id": "remote-5"}))
    assert await GenericWebhookDestination().push(client, sample_lead()) == "remote-5"
    assert client.calls[0].json == {"type": "lead", "lead": sample_lead()}
    failing = FakeClient((500, {"message": "down"}))
    with pytest.raises(RuntimeError, match="500"):
        await GenericWebhookDestination().push(failing, sample_lead())
    assert await GenericWebhookDestination().test(FakeClient((204, None))) is True
