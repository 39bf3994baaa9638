"""The problems of a flow's steps, each with the step's id and the field: what create and update
list with the saved draft and what publish refuses the flow for.

- configuration: each step against its type's model (``step_schemas``), or a plugin type's
  ``config_schema`` (a JSON Schema, checked with ``jsonschema``);
- references: a template may read ``steps.<id>`` only of a step that has ended before it on every
  way to it: an earlier step of its own list or of a list holding it (not a later step, not a step
  on another path of a branch or switch, not a step inside a loop from outside it, not the
  branch, switch or loop it is in, which ends after it); ``loop`` only inside a loop's steps;
- jumps: ``onError: goto:<id>`` names a step of the same list, and a jump back has a
  ``gotoLimit`` (else it could loop forever);
- what the workspace must hold: the connection of an ``action`` step, the flow of a ``call_flow``
  step (not the flow itself) and the action a step names.

Values that are templates (a ``connectionId`` of ``{{ ... }}``) are left to the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
import jsonschema
from jinja2 import Environment, TemplateSyntaxError, nodes
from pydantic import ValidationError
from sqlalchemy import select

from patchbay.core.flows.step_schemas import MODELS
from patchbay.core.flows.steps import step_type

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

_META_KEYS = frozenset({"id", "type", "name", "timeoutSeconds", "onError", "gotoLimit"})
_FIELD = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_parser = Environment()


@attrs.frozen
class Problem:
    step_id: str
    field: str
    message: str

    def json(self) -> dict[str, str]:
        return {"stepId": self.step_id, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        return f"step {self.step_id!r} {self.field or '(step)'}: {self.message}"


def describe(problems: list[Problem]) -> str:
    """One message listing every problem (the error body has room for a message only)."""
    return f"The flow has {len(problems)} problem{'s' if len(problems) != 1 else ''}: " + "; ".join(map(str, problems))


@attrs.define
class _Step:
    """A step as the walk found it: where it is, and what ran before it on every way to it."""

    raw: dict[str, Any]
    position: int
    own: dict[str, Any]
    visible: frozenset[str]
    in_loop: bool


def static_problems(registry: Any, steps: list[dict[str, Any]]) -> list[Problem]:
    """The problems found from the steps alone (configuration, references, jumps). ``steps`` has
    passed ``engine.validate_steps``."""
    found: list[_Step] = []
    problems: list[Problem] = []
    _walk(registry, steps, frozenset(), False, found, problems, [0])
    positions = {step.raw["id"]: step.position for step in found}
    for step in found:
        problems += _configuration(registry, step.raw)
        problems += _references(step, positions)
    return problems


def _walk(
    registry: Any, steps: list[dict[str, Any]], visible: frozenset[str], in_loop: bool, found: list[_Step], problems: list[Problem], counter: list[int]
) -> None:
    ids = [step["id"] for step in steps]
    for index, step in enumerate(steps):
        kind = step_type(registry, step["type"])
        split = getattr(kind, "split", None)
        raw_config = {key: value for key, value in step.items() if key not in _META_KEYS}
        own, blocks = split(raw_config) if split else (raw_config, [])
        prepare = getattr(kind, "prepare", None)
        found.append(_Step(step, counter[0], prepare(own) if prepare else own, visible, in_loop))
        counter[0] += 1
        problems += _jump(step, index, ids)
        if step["type"] == "branch":
            names = [label for label, _ in blocks[:-1]]
            for position, name in enumerate(names):
                if name == "default" or names.index(name) != position:
                    problems.append(Problem(step["id"], f"paths.{position}.name", f"path name {name!r} is used twice (or is the reserved 'default')"))
        for _, children in blocks:
            _walk(registry, children, visible, in_loop or step["type"] == "loop", found, problems, counter)
        visible = visible | {step["id"]}


def _jump(step: dict[str, Any], index: int, ids: list[str]) -> list[Problem]:
    on_error = step.get("onError")
    if not isinstance(on_error, str) or not on_error.startswith("goto:"):
        return []
    target = on_error[5:]
    if target not in ids:
        return [Problem(step["id"], "onError", f"goto {target!r}: no step of that id in the same list of steps")]
    if ids.index(target) <= index and step.get("gotoLimit") is None:
        return [Problem(step["id"], "onError", f"goto {target!r} jumps back and could loop forever: set gotoLimit")]
    return []


def _configuration(registry: Any, step: dict[str, Any]) -> list[Problem]:
    model = MODELS.get(step["type"])
    if model is not None:
        try:
            model.model_validate(step)
        except ValidationError as error:
            by_field: dict[str, list[str]] = {}
            for detail in error.errors():
                by_field.setdefault(_field(detail["loc"]), []).append(detail["msg"])
            return [Problem(step["id"], field, " or ".join(dict.fromkeys(messages))) for field, messages in by_field.items()]
        return []
    schema = getattr(step_type(registry, step["type"]), "config_schema", None)
    if not isinstance(schema, dict):
        return []
    config = {key: value for key, value in step.items() if key not in _META_KEYS}
    problems = []
    for error in jsonschema.Draft202012Validator(schema).iter_errors(config):
        path = [str(part) for part in error.absolute_path]
        if error.validator == "required" and isinstance(error.instance, dict):
            path += [name for name in error.validator_value if name not in error.instance][:1]
        problems.append(Problem(step["id"], ".".join(path), error.message))
    return problems


def _field(loc: tuple[Any, ...]) -> str:
    """The field a pydantic error is about: its path up to the first union member's tag."""
    parts = []
    for part in loc:
        if isinstance(part, int) or (isinstance(part, str) and _FIELD.match(part)):
            parts.append(str(part))
        else:
            break
    return ".".join(parts)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        if "{{" in value or "{%" in value:
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}.{index}" if path else str(index))


def _references(step: _Step, positions: dict[str, int]) -> list[Problem]:
    problems = []
    for field, source in _strings(step.own, ""):
        try:
            tree = _parser.parse(source)
        except TemplateSyntaxError as error:
            problems.append(Problem(step.raw["id"], field, f"the template does not compile: {error.message}"))
            continue
        for name in _step_names(tree):
            if name in step.visible:
                continue
            if name not in positions:
                reason = "no step has that id"
            elif positions[name] >= step.position:
                reason = "that step runs after this one" if positions[name] > step.position else "a step cannot read its own output"
            else:
                reason = "that step may not have run before this one (it is on another path, inside a loop, or holds this step)"
            problems.append(Problem(step.raw["id"], field, f"refers to steps.{name}: {reason}"))
        if not step.in_loop and not any(True for _ in tree.find_all(nodes.For)):
            if any(node.name == "loop" for node in tree.find_all(nodes.Name)):
                problems.append(Problem(step.raw["id"], field, "refers to loop, which exists only in the steps of a loop"))
    return problems


def _step_names(tree: nodes.Template) -> list[str]:
    names = []
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        if isinstance(node.node, nodes.Name) and node.node.name == "steps":
            if isinstance(node, nodes.Getattr):
                names.append(node.attr)
            elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                names.append(node.arg.value)
    return list(dict.fromkeys(names))


def _all_steps(registry: Any, steps: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for step in steps:
        yield step
        split = getattr(step_type(registry, step["type"]), "split", None)
        for _, children in split(step)[1] if split else ():
            yield from _all_steps(registry, children)


def _literal(value: Any) -> str | None:
    """``value`` when it is a plain string (not a template, not a template's placeholder)."""
    if isinstance(value, str) and value and "{{" not in value and "{%" not in value and not value.startswith("$"):
        return value
    return None


async def problems_of(services: Any, session: AsyncSession, *, flow_id: str | None, steps: list[dict[str, Any]]) -> list[Problem]:
    """Every problem of ``steps`` (a flow of the session's workspace): the static ones, then the
    connections, flows and actions the steps name."""
    from patchbay.core.connections.models import Connection
    from patchbay.core.flows.models import Flow

    registry = services.registry
    problems = static_problems(registry, steps)
    every = list(_all_steps(registry, steps))
    wanted = {_literal(s.get("connectionId")) for s in every if s["type"] == "action"} - {None}
    connections = {}
    if wanted:
        rows = (await session.execute(select(Connection.id, Connection.status, Connection.provider).where(Connection.id.in_(wanted)))).all()
        connections = {row.id: row for row in rows if row.status != "disconnected"}
    called = {_literal(s.get("flowId")) for s in every if s["type"] == "call_flow"} - {None}
    flows = set((await session.scalars(select(Flow.id).where(Flow.id.in_(called)))).all()) if called else set()
    for step in every:
        if step["type"] == "action":
            connection_id = _literal(step.get("connectionId"))
            if connection_id is not None and connection_id not in connections:
                problems.append(Problem(step["id"], "connectionId", f"no connection {connection_id!r} in this workspace"))
            problems += _action(registry, step, connections.get(connection_id))
        elif step["type"] == "call_flow":
            target = _literal(step.get("flowId"))
            if target is not None and target == flow_id:
                problems.append(Problem(step["id"], "flowId", "a flow cannot call itself"))
            elif target is not None and target not in flows:
                problems.append(Problem(step["id"], "flowId", f"no flow {target!r} in this workspace"))
    return problems


def _action(registry: Any, step: dict[str, Any], connection: Any) -> list[Problem]:
    """The action a step names, looked up as the run looks it up: the connection's provider's."""
    name = _literal(step.get("action"))
    if name is None:
        return []
    qualified, _, bare = name.rpartition(".")
    provider = connection.provider if connection is not None else _literal(step.get("provider")) or qualified or None
    if provider is None or bare in (registry.get("actions", provider) or {}):
        return []
    return [Problem(step["id"], "action", f"{provider} has no action {bare!r}")]
