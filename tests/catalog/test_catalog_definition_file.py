"""Writing a definition's file: it reads back with tomllib to the same values (strings that need
escapes, keys that need quotes, long lists), in the documented layout, and refuses what is no
definition key."""

import tomllib

import pytest

from patchbay.providers.catalog.definition_file import render

DEFINITION = {
    "name": "acme",
    "display_name": 'Acme "Cloud" \\ Ünïcode ✓ \x7f\t',
    "category": "crm",
    "auth_mode": "oauth2",
    "api_base_url": "https://{subdomain}.acme.io",
    "pkce": False,
    "scopes": [f"https://www.acme.io/auth/scope.number.{n}" for n in range(4)],
    "capabilities": ["oauth", "proxy"],
    "credential_headers": {"authorization": "Bearer {access_token}", "x.weird key": '{{"literal": 1}}'},
    "retry_headers": {"retry_after": "retry-after"},
}


def test_a_rendered_file_reads_back_to_the_same_definition():
    text = render(DEFINITION, header=["checked against the docs " * 8], notes={"scopes": "why these", "retry_headers": "from the docs"})
    assert tomllib.loads(text) == DEFINITION
    lines = text.splitlines()
    assert lines[0].startswith("# checked against the docs") and all(len(line) <= 100 for line in lines if line.startswith("#"))
    assert lines.index('name = "acme"') < lines.index("# why these") < lines.index("scopes = [") < lines.index("[credential_headers]")
    assert lines.index("[credential_headers]") < lines.index("# from the docs") < lines.index("[retry_headers]")
    assert '"x.weird key" = ' in text and 'capabilities = ["oauth", "proxy"]' in text


def test_only_definition_keys_and_plain_values_are_written():
    with pytest.raises(ValueError, match=r"not a definition key: \['colour'\]"):
        render({**DEFINITION, "colour": "red"})
    with pytest.raises(TypeError, match="strings, booleans"):
        render({**DEFINITION, "display_name": 7})
