"""Inputs checked against a JSON Schema (Draft 2020-12, the ``jsonschema`` library): an action's
``inputs`` before it runs, a declared poll trigger's ``config`` before it polls.

Two rules sit on top of the schema, as the hand-written check before it had them: a top-level
``null`` is an input not given (its schema is not applied; the declared runner leaves it out of the
call), and a required input may not be the empty string (a flow's template that rendered nothing).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from patchbay.core.errors import Invalid


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def check_inputs(schema: Mapping[str, Any], values: Any, what: str = "inputs") -> dict[str, Any]:
    """``values`` when they satisfy ``schema``; else :class:`Invalid` naming the field
    (``inputs.email is required``, ``inputs.priority: 'high' is not of type 'integer'``)."""
    if not isinstance(values, dict):
        raise Invalid(f"{what} must be an object")
    required = schema.get("required") or ()
    given = {name: value for name, value in values.items() if value is not None and not (value == "" and name in required)}
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True, default=str)).iter_errors(given))
    if error is None:
        return values
    where = ".".join([what, *map(str, error.absolute_path)])
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = next((name for name in error.validator_value if name not in error.instance), None)
        if missing is not None:
            raise Invalid(f"{where}.{missing} is required")
    raise Invalid(f"{where}: {error.message}")
