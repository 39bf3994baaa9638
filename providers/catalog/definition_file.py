"""Write a provider definition as the text of its TOML file (``definitions/<name>.toml``).

The importer uses this for the files it adds; a contributor edits the files by hand. The layout
keeps a file easy to read and to review: the identity and the short keys first, in a fixed order,
lists on one line while they fit, and the tables (headers, query, defaults, retry headers) last.
Only the standard library is used; the result reads back with :mod:`tomllib` to the same values.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

#: The order of the keys in a file; the mappings follow as tables in the order of ``TABLES``.
KEYS = (
    "name",
    "display_name",
    "category",
    "categories",
    "auth_mode",
    "api_base_url",
    "docs_url",
    "health_check",
    "authorization_url",
    "token_url",
    "revocation_url",
    "token_auth_method",
    "pkce",
    "refreshes",
    "scopes",
    "scope_separator",
    "connection_params",
    "fixed_params",
    "oauth_hosts",
    "webhooks",
    "capabilities",
    "is_available",
    "optional_fields",
    "basic_password",
    "basic_pair",
)
TABLES = ("credential_headers", "credential_query", "authorization_params", "connection_param_defaults", "retry_headers", "field_labels", "field_help")

WIDTH = 100
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _string(value: str) -> str:
    # JSON's escapes (\" \\ \n \t \uXXXX ...) are all valid in a TOML basic string; TOML also wants DEL escaped
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"a definition holds strings, booleans, lists of strings and tables of strings, not {value!r}")


def _comment(text: str) -> list[str]:
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines += textwrap.wrap(paragraph, WIDTH - 2, break_long_words=False, break_on_hyphens=False) or [""]
    return [f"# {line}".rstrip() for line in lines]


def _assignment(key: str, value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return [f"{_key(key)} = {_value(value)}"]
    items = [_value(item) for item in value]
    line = f"{_key(key)} = [{', '.join(items)}]"
    if len(line) <= WIDTH:
        return [line]
    return [f"{_key(key)} = [", *(f"    {item}," for item in items), "]"]


def render(definition: Mapping[str, Any], *, header: Iterable[str] = (), notes: Mapping[str, str] | None = None) -> str:
    """The file text of ``definition`` (keys as the fields of :class:`patchbay.Provider`, values
    plain: strings, booleans, lists, tables). ``header`` comments open the file; ``notes`` put a
    comment above a key or a table (why a value is what it is, where it was checked)."""
    notes = notes or {}
    unknown = set(definition) - set(KEYS) - set(TABLES)
    if unknown:
        raise ValueError(f"not a definition key: {sorted(unknown)}")
    lines: list[str] = []
    for text in header:
        lines += _comment(text)
    for key in KEYS:
        if key in definition:
            lines += _comment(notes[key]) if key in notes else []
            lines += _assignment(key, definition[key])
    for table in TABLES:
        if table not in definition:
            continue
        lines.append("")
        lines += _comment(notes[table]) if table in notes else []
        lines.append(f"[{table}]")
        lines += [f"{_key(key)} = {_value(value)}" for key, value in definition[table].items()]
    return "\n".join(lines) + "\n"
