"""docs/provider-packs.md shows a declared action, a declared poll trigger and a webhook trigger,
each a whole file of under 30 lines that the loader accepts as it is printed; its ``[webhooks]``
fragments load too."""

from __future__ import annotations

import re
from pathlib import Path

from patchbay.core.declared.loader import parse

PAGE = Path(__file__).resolve().parents[2] / "docs" / "provider-packs.md"


def examples() -> list[str]:
    section = PAGE.read_text(encoding="utf-8").split("## Declared actions and triggers", 1)[1]
    return re.findall(r"```toml\n(.*?)```", section, flags=re.S)


def test_the_page_shows_an_action_a_poll_trigger_and_a_webhook_trigger_each_in_under_30_lines():
    whole = [text for text in examples() if text.startswith("provider = ")]
    shown = {}
    for text in whole:
        declaration = parse(text, "docs/provider-packs.md")
        kinds = {"action"} if declaration.actions else set()
        kinds |= {trigger.kind for trigger in declaration.triggers}
        for kind in kinds:
            shown.setdefault(kind, len(text.splitlines()))
    assert set(shown) == {"action", "poll", "webhook"}, shown
    assert all(lines < 30 for lines in shown.values()), shown


def test_the_webhooks_fragments_load():
    fragments = [text for text in examples() if text.startswith("[webhooks]")]
    assert fragments
    for text in fragments:
        assert parse('provider = "acme"\n' + text, "docs/provider-packs.md").webhooks is not None
