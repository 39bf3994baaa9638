"""A provider's page: its actions and triggers with their schemas and documentation links, for
any member; an unknown provider is 404."""

from __future__ import annotations

import html

from patchbay.core.appkeys import SERVICES


async def _page(http, path: str) -> tuple[int, str]:
    async with http.get(http.base + path) as response:
        return response.status, html.unescape(await response.text())


async def test_a_viewer_reads_a_providers_actions_and_triggers_with_their_schemas(make_person, sign_in, console_server):
    registry = console_server.app[SERVICES].registry
    person = await make_person("viewer")
    http = await sign_in(person)
    status, page = await _page(http, f"/console/w/{person.workspace_id}/providers/github")
    assert status == 200
    actions, triggers = registry.get("actions", "github"), registry.get("triggers", "github")
    assert actions and triggers
    for action in actions.values():
        assert f'id="action-{action.name}"' in page and action.docs_url in page
        for field in action.inputs.get("properties", {}):
            assert f'"{field}"' in page, f"{action.name}: its input {field} is not shown"
    for trigger in triggers.values():
        assert f'id="trigger-{trigger.name}"' in page and trigger.docs_url in page
    assert f"Actions ({len(actions)})" in page and f"Triggers ({len(triggers)})" in page


async def test_an_unknown_provider_is_404(make_person, sign_in):
    person = await make_person("viewer")
    http = await sign_in(person)
    status, _ = await _page(http, f"/console/w/{person.workspace_id}/providers/no-such-provider")
    assert status == 404
