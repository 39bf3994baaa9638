"""Step values are templates (contract section 6): ``{{ expr }}`` rendered in a sandboxed Jinja2
environment over ``trigger`` (the trigger payload) and ``steps.<id>.output``.

A string that is exactly one ``{{ expr }}`` keeps the expression's type (a number stays a number, an
object an object); any other string renders to a string. Dicts and lists are rendered value by value.
The sandbox refuses attribute escapes (``__class__``, ``mro``, ``func_globals`` ...) with
:class:`TemplateFailure` instead of yielding an empty value. Compiled templates are cached, so a flow
run a thousand times compiles each value once.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

_SINGLE = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\s*$", re.DOTALL)


class TemplateFailure(ValueError):
    """A template failed to compile or render; the message says which and why."""


class _Environment(ImmutableSandboxedEnvironment):
    def unsafe_undefined(self, obj: Any, attribute: str):
        # Refuse loudly: a silently empty value would hide an escape attempt.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed")


_env = _Environment(undefined=StrictUndefined, autoescape=False)


@functools.lru_cache(maxsize=4096)
def _compiled(source: str):
    match = _SINGLE.match(source)
    try:
        if match:
            return True, _env.compile_expression(match.group("expr").strip(), undefined_to_none=False)
        return False, _env.from_string(source)
    except TemplateError as error:
        raise TemplateFailure(f"template {source!r} does not compile: {error}") from None


def render_value(value: Any, context: dict[str, Any]) -> Any:
    """Render every template string inside ``value`` (a str, dict, list or scalar)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        single, compiled = _compiled(value)
        try:
            if single:
                result = compiled(**context)
                return _plain(result)
            return compiled.render(**context)
        except SecurityError as error:
            raise TemplateFailure(f"template {value!r} refused by the sandbox: {error}") from None
        except TemplateError as error:
            raise TemplateFailure(f"template {value!r} failed: {error}") from None
        except Exception as error:  # an expression's own error (division by zero, a bad index ...)
            raise TemplateFailure(f"template {value!r} failed: {error!r}") from None
    if isinstance(value, dict):
        return {key: render_value(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, context) for item in value]
    return value


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """Evaluate a bare expression (``trigger.amount > 10``) or a template string."""
    if "{{" in expression:
        return render_value(expression, context)
    return render_value("{{ " + expression + " }}", context)


def _plain(value: Any) -> Any:
    """Turn what an expression yields into JSON-friendly data (tuples to lists, undefined refused)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
