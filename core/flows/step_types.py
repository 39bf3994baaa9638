"""The step types a flow may use, described for a flow editor: each with the JSON Schema of its
configuration (built-in types: their ``step_schemas`` model; plugin types: their
``config_schema``, else any object)."""

from __future__ import annotations

from typing import Any

from patchbay.core.flows.step_schemas import MODELS, schema_of
from patchbay.core.flows.steps import known_step_types, step_type

_ANY = {"type": "object", "properties": {"id": {"type": "string"}, "type": {"type": "string"}}, "required": ["id", "type"]}


def step_types(registry: Any) -> list[dict[str, Any]]:
    listed = []
    for name in known_step_types(registry):
        kind = step_type(registry, name)
        model = MODELS.get(name)
        doc = (model.__doc__ if model is not None else getattr(kind, "__doc__", None)) or ""
        listed.append(
            {
                "type": name,
                "title": getattr(kind, "title", None) or name,
                "description": " ".join(doc.split()),
                "control": hasattr(kind, "run_control"),
                "sideEffects": bool(getattr(kind, "side_effects", True)),
                "schema": schema_of(model) if model is not None else dict(getattr(kind, "config_schema", None) or _ANY),
            }
        )
    return listed
