"""Step values are templates (contract section 6): ``{{ expr }}`` rendered in a sandboxed Jinja2
environment over ``trigger`` (the trigger payload) and ``steps.<id>.output``.

Template work is bounded (one tenant's template must not stall the process): every render has a
budget of ``MAX_OPERATIONS`` operations (loop iterations, calls, attribute and item lookups,
operators) and a deadline; a value a template builds (``'x' * n``, ``a ~ b``, ``a + b``, ``x ** y``,
a width given to a padding filter or method) may not exceed ``MAX_LENGTH`` characters or items, nor
a number ``MAX_INT_BITS`` bits. Past any bound the render fails with :class:`TemplateFailure`. The
flow engine renders a step's values in a worker thread inside the step's timeout, whose end is the
render's deadline (:func:`deadline`), so a slow template also fails the step instead of blocking
the event loop.

A string that is exactly one ``{{ expr }}`` keeps the expression's type (a number stays a number, an
object an object); any other string renders to a string. Dicts and lists are rendered value by value.
The sandbox refuses attribute escapes (``__class__``, ``mro``, ``func_globals`` ...) with
:class:`TemplateFailure` instead of yielding an empty value. Compiled templates are cached, so a flow
run a thousand times compiles each value once, and :func:`compile_value` prepares a whole step
once for many renders.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import StrictUndefined, TemplateError, nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

_SINGLE = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\s*$", re.DOTALL)

MAX_OPERATIONS = 1_000_000
MAX_LENGTH = 1_000_000
MAX_INT_BITS = 4096
#: deadline of a render outside a flow step (tests, previews)
DEFAULT_RENDER_SECONDS = 5.0
#: filters and ``str`` methods whose integer arguments are output widths or counts
_WIDTH_TAKERS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "indent", "truncate", "wordwrap", "batch", "slice"})
#: a ``%`` format with a width or precision of 5 digits or more
_WIDE_PERCENT = re.compile(r"%[-#0 +]*(\d{5,}|\*)|%[-#0 +]*\d*\.(\d{5,}|\*)")
#: a ``str.format`` field with a width or precision of 5 digits or more
_WIDE_BRACE = re.compile(r"\{[^{}]*:[^{}]*\d{5,}")


class TemplateFailure(ValueError):
    """A template failed to compile or render; the message says which and why."""


class _Budget:
    def __init__(self, until: float) -> None:
        self.left = MAX_OPERATIONS
        self.until = until

    def charge(self, amount: int = 1) -> None:
        self.left -= amount
        if self.left < 0:
            raise TemplateFailure(f"template work exceeded {MAX_OPERATIONS} operations")
        if time.monotonic() > self.until:
            raise TemplateFailure("template rendering ran past the step's timeout")


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("template_deadline", default=None)
_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("template_budget", default=None)


@contextlib.contextmanager
def deadline(until: float) -> Iterator[None]:
    """Renders inside this block stop at ``until`` (``time.monotonic()`` seconds)."""
    token = _deadline.set(until)
    try:
        yield
    finally:
        _deadline.reset(token)


def _charge(amount: int = 1) -> None:
    budget = _budget.get()
    if budget is not None:
        budget.charge(amount)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple) else 0


def _check_size(size: int) -> None:
    if size > MAX_LENGTH:
        raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")
    _charge(1 + size // 4096)


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    """What a ``{% for %}`` loop iterates: its items, each charged to the budget."""
    for item in iterable:
        _charge()
        yield item


def _concat(*parts: Any) -> str:
    """``a ~ b``, bounded."""
    texts = [str(part) for part in parts]
    _check_size(sum(map(len, texts)))
    return "".join(texts)


class _Bounded(NodeTransformer):
    """Route every loop through ``_counted`` and every ``~`` through ``_concat``."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = nodes.Call(nodes.Name("_pb_counted", "load"), [node.iter], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Call:
        self.generic_visit(node)
        return nodes.Call(nodes.Name("_pb_concat", "load"), list(node.nodes), [], None, None, lineno=node.lineno)


def _width_args(name: str, args: Iterable[Any]) -> None:
    if name in _WIDTH_TAKERS and any(isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_LENGTH for a in args):
        raise TemplateFailure(f"template asks {name} for more than {MAX_LENGTH}")


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def unsafe_undefined(self, obj: Any, attribute: str):
        # Refuse loudly: a silently empty value would hide an escape attempt.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed")

    def _generate(self, source, name, filename, defer_init=False):
        return super()._generate(_Bounded().visit(source), name, filename, defer_init)

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        _charge()
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if _size(sequence) and isinstance(times, int):
                    _check_size(_size(sequence) * max(times, 0))
            if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateFailure(f"template number would be larger than {MAX_INT_BITS} bits")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0 and left.bit_length() * right > MAX_INT_BITS:
                raise TemplateFailure(f"template number would be larger than {MAX_INT_BITS} bits")
        elif operator == "+":
            _check_size(_size(left) + _size(right))
        elif operator == "%" and isinstance(left, str) and _WIDE_PERCENT.search(left):
            raise TemplateFailure("template % format asks for a width or precision over 9999")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - the sandbox's own signature
        _charge()
        name = getattr(__obj, "__name__", "")
        _width_args(name, [*args, *kwargs.values()])
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # the sandbox wraps str.format
        if name in ("format", "format_map") and isinstance(owner, str) and _WIDE_BRACE.search(owner):
            raise TemplateFailure("template format asks for a width or precision over 9999")
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _charge()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _charge()
        return super().getitem(obj, argument)


def _bounded_filter(name: str, function):
    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _charge()
        _width_args(name, [*args[1:], *kwargs.values()])
        if name == "format" and any(isinstance(a, str) and _WIDE_PERCENT.search(a) for a in args[:1]):
            raise TemplateFailure("template % format asks for a width or precision over 9999")
        return function(*args, **kwargs)

    return bounded


_env = _Environment(undefined=StrictUndefined, autoescape=False)
_env.globals.update(_pb_counted=_counted, _pb_concat=_concat)
# filters are called directly by compiled templates, not through the sandbox's hooks
_env.filters.update({name: _bounded_filter(name, _env.filters[name]) for name in _WIDTH_TAKERS | {"format"} if name in _env.filters})


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
    """Render every template string inside ``value`` (a str, dict, list or scalar), within one budget
    of work and the current :func:`deadline` (``DEFAULT_RENDER_SECONDS`` from now without one)."""
    return compile_value(value).render(context)


class Compiled:
    """A value prepared for many renders (a flow version's step, run a thousand times): its
    templates are compiled once and its constant parts are not walked again. ``templated`` is False
    when nothing in it is a template (rendering answers the value itself). ``light`` is None, or a
    cheap render of the whole value that answers :data:`HEAVY` when it cannot decide exactly what
    :meth:`render` would answer (see :func:`light_path`)."""

    __slots__ = ("_render", "light", "templated")

    def __init__(self, render, templated: bool, light=None) -> None:
        self._render = render
        self.templated = templated
        self.light = light

    def render(self, context: dict[str, Any]) -> Any:
        """Like :func:`render_value`: one budget of work, the current :func:`deadline`."""
        if not self.templated:
            return self._render(context)
        until = _deadline.get()
        token = _budget.set(_Budget(until if until is not None else time.monotonic() + DEFAULT_RENDER_SECONDS))
        try:
            return self._render(context)
        finally:
            _budget.reset(token)


def compile_value(value: Any) -> Compiled:
    """Prepare ``value`` for :meth:`Compiled.render`. A template that does not compile fails when
    rendered (the step fails with the reason), not here."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return Compiled(lambda context: value, False, lambda context: value)
        return Compiled(functools.partial(_render_template, value), True, light_path(value))
    if isinstance(value, dict):  # containers are built anew by every render: a step may change its own
        parts = {key: compile_value(item) for key, item in value.items()}
        renders = [(key, part._render) for key, part in parts.items()]
        return Compiled(lambda context: {key: render(context) for key, render in renders}, any(part.templated for part in parts.values()),
                        _light_all(list(parts.items()), dict))  # fmt: skip
    if isinstance(value, list):
        parts = [compile_value(item) for item in value]
        renders = [part._render for part in parts]
        return Compiled(lambda context: [render(context) for render in renders], any(part.templated for part in parts),
                        _light_all(list(enumerate(parts)), lambda pairs: [item for _, item in pairs]))  # fmt: skip
    return Compiled(lambda context: value, False, lambda context: value)


# ---------------------------------------------------------------------------------------------
# Light templates: a path into the data, rendered without Jinja
# ---------------------------------------------------------------------------------------------

#: what a light render answers when only a full render can tell the value (or the error)
HEAVY = object()
#: filters a light template may end with, applied to a string of at most ``LIGHT_STRING`` characters
_LIGHT_FILTERS = {"lower": str.lower, "upper": str.upper, "trim": str.strip}
LIGHT_STRING = 64 * 1024
_SCALARS = (str, int, float, bool, type(None))
#: names a dict answers as attributes (``trigger.items`` is the method, not the key): never light
_DICT_ATTRIBUTES = frozenset(dir(dict))


def _light_all(parts: list[tuple[Any, Compiled]], build):
    if any(part.light is None for _, part in parts):
        return None
    lights = [(key, part.light) for key, part in parts]

    def light(context: dict[str, Any]) -> Any:
        values = []
        for key, render in lights:
            item = render(context)
            if item is HEAVY:
                return HEAVY
            values.append((key, item))
        return build(values)

    return light


@functools.lru_cache(maxsize=4096)
def light_path(source: str):
    """A render of ``source`` that costs a few dict and list lookups, or None.

    ``source`` qualifies when it is exactly one ``{{ name.key['key'][0] }}`` (optionally ending
    with ``| lower``, ``| upper`` or ``| trim``): its work is bounded by the length of the path, so it
    may run on the event loop instead of a worker thread. The light render answers what the sandboxed
    render answers when every step of the path is a key of a plain dict or an index of a plain list
    and the value found is a string, a number, a boolean or null (the filters: a string of at most
    ``LIGHT_STRING`` characters); in every other case (a missing key, a dict method, an object, a
    container to copy, a long string) it answers :data:`HEAVY`, and the full render decides."""
    match = _SINGLE.match(source)
    if not match:
        return None
    parser = Parser(_env, match.group("expr").strip(), state="variable")  # as ``compile_expression`` parses it
    try:
        node = parser.parse_expression()
    except TemplateError:
        return None
    if not parser.stream.eos:
        return None
    filters = []
    while isinstance(node, nodes.Filter):
        if node.name not in _LIGHT_FILTERS or node.args or node.kwargs or node.dyn_args or node.dyn_kwargs or node.node is None:
            return None
        filters.append(_LIGHT_FILTERS[node.name])
        node = node.node
    filters.reverse()
    path: list[tuple[bool, Any]] = []  # (by attribute, key), innermost last until reversed
    while not isinstance(node, nodes.Name):
        if isinstance(node, nodes.Getattr) and node.attr not in _DICT_ATTRIBUTES:
            path.append((True, node.attr))
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and type(node.arg.value) in (str, int):
            path.append((False, node.arg.value))
        else:
            return None
        node = node.node
    path.reverse()
    root = node.name

    def light(context: dict[str, Any]) -> Any:
        value = context.get(root, HEAVY)
        for by_attribute, key in path:
            kind = type(value)
            if kind is dict:
                if key not in value:
                    return HEAVY  # the sandbox's lookup falls back to attributes, or fails: let it say which
                value = value[key]
            elif kind is list and not by_attribute and type(key) is int and -len(value) <= key < len(value):
                value = value[key]
            else:
                return HEAVY
        if type(value) not in _SCALARS:
            return HEAVY
        for apply in filters:
            if type(value) is not str or len(value) > LIGHT_STRING:
                return HEAVY
            value = apply(value)
        return value

    return light


def _render_template(value: str, context: dict[str, Any]) -> Any:
    single, compiled = _compiled(value)
    try:
        if single:
            return _plain(compiled(**context))
        return _joined(compiled.generate(**context))
    except TemplateFailure as failure:
        raise TemplateFailure(f"template {value!r} failed: {failure}") from None
    except SecurityError as error:
        raise TemplateFailure(f"template {value!r} refused by the sandbox: {error}") from None
    except TemplateError as error:
        raise TemplateFailure(f"template {value!r} failed: {error}") from None
    except Exception as error:  # an expression's own error (division by zero, a bad index ...)
        raise TemplateFailure(f"template {value!r} failed: {error!r}") from None


def _joined(chunks: Iterable[str]) -> str:
    """A template's output, refused once it passes ``MAX_LENGTH``."""
    parts, length = [], 0
    for chunk in chunks:
        length += len(chunk)
        _check_size(length)
        parts.append(chunk)
    return "".join(parts)


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
