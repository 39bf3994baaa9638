"""Every action the installed packs register, declared (``actions.toml``, whose format requires
``docs``) or written in code (``Action(docs_url=...)``), is listed with the provider's public page
documenting the operation it calls."""

from __future__ import annotations

from urllib.parse import urlsplit

from patchbay.core.testing import create_workspace_with_key

#: code actions for which no public page of the provider documenting the operation was found; an
#: entry leaves this list when its page is cited
WITHOUT_PAGE = {"pipedrive.create_person"}


async def test_every_listed_action_links_the_providers_documentation(client):
    headers = (await create_workspace_with_key(client.server.app))["headers"]
    response = await client.get("/api/registry/actions", headers=headers)
    assert response.status == 200
    actions = (await response.json())["data"]
    assert {"hubspot.create_contact", "slack.send_message", "twilio.send_message"} <= {action["id"] for action in actions}
    missing = {action["id"] for action in actions if not action["docsUrl"]}
    assert missing == WITHOUT_PAGE, f"actions without a documentation URL: {sorted(missing - WITHOUT_PAGE)}"
    for action in actions:
        if action["docsUrl"]:
            url = urlsplit(action["docsUrl"])
            assert url.scheme == "https" and url.netloc, f"{action['id']}: {action['docsUrl']!r} is not an https URL"


#: triggers for which no public page of the provider documenting the event or the listing they poll
#: was found; an entry leaves this list when its page is cited
TRIGGERS_WITHOUT_PAGE: set[str] = set()


async def test_every_listed_trigger_links_the_providers_documentation(client):
    """Declared triggers (``docs`` in ``actions.toml``) and code triggers (``Trigger(docs_url=...)``)
    alike: each provider's page lists its triggers with the provider's page on the event or poll."""
    headers = (await create_workspace_with_key(client.server.app))["headers"]
    response = await client.get("/connect/v1/flows/trigger-options", headers=headers)
    assert response.status == 200
    triggers = {}
    for option in await response.json():
        detail = await client.get(f"/connect/v1/providers/{option['providerType']}", headers=headers)
        assert detail.status == 200
        for trigger in (await detail.json())["triggers"]:
            triggers[f"{option['providerType']}.{trigger['name']}"] = trigger["docsUrl"]
    assert {"hubspot.contact.creation", "slack.message", "twilio.incoming_message"} <= set(triggers)
    missing = {name for name, url in triggers.items() if not url}
    assert missing == TRIGGERS_WITHOUT_PAGE, f"triggers without a documentation URL: {sorted(missing - TRIGGERS_WITHOUT_PAGE)}"
    for name, url in triggers.items():
        if url:
            parts = urlsplit(url)
            assert parts.scheme == "https" and parts.netloc, f"{name}: {url!r} is not an https URL"
