"""Requests built from /openapi.json's declarations only (issue 17): a test that sends a form or a
query through :class:`Documented` fails when it names a field the operation does not declare, leaves
out a required one, or gives a value outside a declared ``const``/``enum``."""

from __future__ import annotations

import re
from typing import Any

from patchbay.core.http.openapi import FORM


class Documented:
    """Builds requests from the document's declarations only."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def _operation(self, method: str, path: str) -> dict[str, Any]:
        return self.document["paths"][path][method.lower()]

    def form(self, method: str, path: str, **values: str) -> dict[str, str]:
        """``values`` as the operation's form, once checked against its declared fields."""
        schema = self._operation(method, path)["requestBody"]["content"][FORM]["schema"]
        schema = self.document["components"]["schemas"][schema["$ref"].rpartition("/")[2]]
        declared = set(schema["properties"])
        patterns = [re.compile(pattern) for pattern in schema.get("patternProperties", {})]
        undeclared = [name for name in values if name not in declared and not any(p.search(name) for p in patterns)]
        assert undeclared == [], f"{method} {path} does not declare {undeclared}"
        missing = set(schema.get("required", ())) - set(values)
        assert not missing, f"{method} {path} requires {missing}"
        for name, value in values.items():
            allowed = schema["properties"].get(name, {})
            assert value == allowed.get("const", value) and value in allowed.get("enum", [value]), f"{name}={value!r} is not declared"
        return values

    def query(self, method: str, path: str, **values: str) -> dict[str, str]:
        """``values`` as the operation's query, once checked against its declared parameters."""
        parameters = {p["name"]: p for p in self._operation(method, path).get("parameters", ()) if p["in"] == "query"}
        assert set(values) <= set(parameters), f"{method} {path} does not declare {set(values) - set(parameters)}"
        missing = {name for name, p in parameters.items() if p["required"]} - set(values)
        assert not missing, f"{method} {path} requires {missing}"
        return values
