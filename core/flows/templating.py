"""Step values are templates (contract section 6): ``{{ expr }}`` rendered in a sandboxed Jinja2
environment over ``trigger`` (the trigger payload) and ``steps.<id>.output``.

Template work is bounded (one tenant's template must not stall the process or hold a render
thread): every render has a :class:`~patchbay.core.flows.template_bounds.Budget` of operations,
CPU time and a deadline, and every value a template builds is size-checked before it is built
(see ``template_bounds``). The hooks below charge it: the sandbox's ``call``, ``call_binop``,
``getattr`` and ``getitem``, every filter (wrapped), and what ``_Bounded`` routes through internal
filters: loops, ``~``, each output chunk, each list, tuple or dict literal and each slice (a copy).
The result of a method of the data (``copy``, ``fromkeys``, ``to_bytes``) is weighed too, and every
number a template makes is refused past ``MAX_INT_BITS``: a single C call (big-number division,
``round``, ``to_bytes``) is never interrupted, so its cost is bounded by its operands. ``tojson``
and ``pprint`` write piece by piece into a bounded sink. ``lipsum``, ``cycler``, ``joiner`` and
``urlize`` are not available; ``range`` has at most ``MAX_RANGE`` items. Past any
bound the render fails with :class:`TemplateFailure`. The flow engine renders a step's values in a
worker thread inside the step's timeout, whose end is the render's deadline (:func:`deadline`), so a
slow template also fails the step instead of blocking the event loop.

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
import json
import pprint
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import StrictUndefined, TemplateError, nodes, pass_context
from jinja2.parser import Parser
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
    SecurityError,
)
from jinja2.utils import Namespace, htmlsafe_json_dumps
from jinja2.visitor import NodeTransformer

from patchbay.core.flows import template_bounds as bounds
from patchbay.core.flows.template_bounds import (
    MAX_INT_BITS,
    MAX_JSON_INDENT,
    MAX_LENGTH,
    MAX_RANGE,
    MAX_ROUND_DIGITS,
    MAX_SOURCE_LENGTH,
    Budget,
    TemplateFailure,
    weight,
)

__all__ = ["HEAVY", "LIGHT_STRING", "Compiled", "TemplateFailure", "compile_value", "deadline", "evaluate", "light_path", "render_value"]

_SINGLE = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\s*$", re.DOTALL)

#: deadline of a render outside a flow step (tests, previews)
DEFAULT_RENDER_SECONDS = 5.0
#: filters and ``str`` methods whose integer arguments are output widths or counts
_WIDTH_TAKERS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "indent", "truncate", "wordwrap", "batch", "slice", "to_bytes"})
#: Jinja's globals a template may not use: ``lipsum`` builds its text in one uninterruptible call,
#: ``cycler`` and ``joiner`` are mutable state no step value needs
_REMOVED_GLOBALS = ("lipsum", "cycler", "joiner")
#: Jinja's filters a template may not use: ``urlize`` searches each word with a pattern whose time
#: is quadratic in the word's length, in one call nothing interrupts
_REMOVED_FILTERS = ("urlize",)
#: methods of the data that answer a value it already holds (like ``[]``), not a new one
_LOOKUPS = frozenset({"get"})

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("template_deadline", default=None)
_budget = bounds.current
_charge, _build, _built = bounds.charge, bounds.build, bounds.built


@contextlib.contextmanager
def deadline(until: float) -> Iterator[None]:
    """Renders inside this block stop at ``until`` (``time.monotonic()`` seconds)."""
    token = _deadline.set(until)
    try:
        yield
    finally:
        _deadline.reset(token)


def _watching():
    """The budget checked inside the Python code of a filter or method (see ``Budget.watching``)."""
    budget = _budget.get()
    return contextlib.nullcontext() if budget is None else budget.watching()


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    """What a ``{% for %}`` loop iterates: its items, each charged to the budget."""
    for item in iterable:
        _charge()
        yield item


def _text(value: Any) -> str:
    """``str(value)``, refused before printing a value too heavy to print."""
    return value if isinstance(value, str) else str(_checked_weight(value))


def _concat(*parts: Any) -> str:
    """``a ~ b``, bounded."""
    texts = [_text(part) for part in parts]
    _build(sum(map(len, texts)))
    return "".join(texts)


def _output(value: Any) -> Any:
    """A chunk of output (``{{ value }}`` or literal text): every chunk counts toward the render's
    bound, so a loop or a macro cannot join more than it allows."""
    _build(weight(value))
    return value


def _range(*args: int) -> range:
    _charge()
    return bounds.bounded_range(*args)


class _Bounded(NodeTransformer):
    """Route every loop through ``_counted``, every ``~`` through ``_concat``, every output chunk
    through ``_output`` and every list, tuple and dict literal through ``_built``."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = _hook("_pb_counted", node.iter, node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Call:
        self.generic_visit(node)
        first, *rest = node.nodes
        return nodes.Filter(first, "_pb_concat", rest, [], None, None, lineno=node.lineno)

    def visit_Output(self, node: nodes.Output) -> nodes.Output:
        self.generic_visit(node)
        node.nodes = [_hook("_pb_output", nodes.Const(child.data) if isinstance(child, nodes.TemplateData) else child, child.lineno) for child in node.nodes]
        return node

    def _literal(self, node: nodes.Expr) -> nodes.Expr:
        self.generic_visit(node)
        return _hook("_pb_built", node, node.lineno) if getattr(node, "ctx", "load") == "load" else node

    visit_List = visit_Tuple = visit_Dict = _literal

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Expr:
        self.generic_visit(node)  # a slice is a copy (compiled to Python's own ``[a:b]``, not the sandbox's getitem)
        return _hook("_pb_built", node, node.lineno) if isinstance(node.arg, nodes.Slice) and node.ctx == "load" else node

    def visit_Const(self, node: nodes.Const) -> nodes.Const:
        if isinstance(node.value, int):
            bounds.number(node.value)
        return node


def _hook(name: str, argument: nodes.Expr, lineno: int) -> nodes.Filter:
    """``argument`` passed through the hook ``name``: an internal filter, called directly by the
    compiled template (a global would go through the sandbox's ``call``)."""
    return nodes.Filter(argument, name, [], [], None, None, lineno=lineno)


def _width_args(name: str, args: Iterable[Any]) -> None:
    if name in _WIDTH_TAKERS and any(isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_LENGTH for a in args):
        raise TemplateFailure(f"template asks {name} for more than {MAX_LENGTH}")


class _FieldsBounded:
    """A ``str.format`` whose fields are refused past ``MAX_WIDTH`` or ``MAX_LENGTH`` in all."""

    _length = 0

    def format_field(self, value: Any, format_spec: str) -> Any:
        bounds.spec_widths(format_spec)
        text = super().format_field(_checked_weight(value), format_spec)
        self._length += len(text)
        if self._length > MAX_LENGTH:
            raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")
        return text


class _Formatter(_FieldsBounded, SandboxedFormatter):
    pass


class _EscapeFormatter(_FieldsBounded, SandboxedEscapeFormatter):
    pass


def _checked_weight(value: Any) -> Any:
    if weight(value) > MAX_LENGTH:
        raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")
    return value


def _str_method_size(owner: str | bytes, name: str, args: tuple, kwargs: dict) -> int | None:
    """At most how long ``owner.<name>(*args, **kwargs)`` is, for the methods whose result may be
    much longer than ``owner``; None for the others (at most a few times ``owner``)."""
    arguments = [*args, *kwargs.values()]
    if name == "replace" and len(arguments) >= 2 and all(isinstance(a, type(owner)) for a in arguments[:2]):
        count = arguments[2] if len(arguments) > 2 and isinstance(arguments[2], int) else -1
        return bounds.replace_size(owner, arguments[0], arguments[1], count)
    if name in ("center", "ljust", "rjust", "zfill") and arguments and isinstance(arguments[0], int):
        return max(len(owner), arguments[0])
    if name == "expandtabs":
        size = arguments[0] if arguments and isinstance(arguments[0], int) else 8
        return len(owner) + owner.count("\t" if isinstance(owner, str) else b"\t") * max(size, 0)
    if name == "translate" and arguments and isinstance(arguments[0], dict):
        longest = max((len(v) for v in arguments[0].values() if isinstance(v, str | bytes)), default=1)
        return len(owner) * max(longest, 1)
    return None


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "-", "//", "%"})

    def unsafe_undefined(self, obj: Any, attribute: str):
        # Refuse loudly: a silently empty value would hide an escape attempt.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed")

    def _generate(self, source, name, filename, defer_init=False):
        return super()._generate(_Bounded().visit(source), name, filename, defer_init)

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        _charge()
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
                    _build(weight(sequence) * max(times, 0))
            if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateFailure(f"template number would be larger than {MAX_INT_BITS} bits")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0 and left.bit_length() * right > MAX_INT_BITS:
                raise TemplateFailure(f"template number would be larger than {MAX_INT_BITS} bits")
        elif operator == "+":
            if isinstance(left, str | bytes | list | tuple) and isinstance(right, str | bytes | list | tuple):
                _build(weight(left) + weight(right))
        elif operator == "%" and isinstance(left, str):
            _build(bounds.percent_size(left, right))
        result = super().call_binop(context, operator, left, right)
        return bounds.number(result) if isinstance(result, int) else result  # ``+`` and ``-`` grow a number a bit a turn

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - the sandbox's own signature
        _charge()
        name = getattr(__obj, "__name__", "")
        _width_args(name, [*args, *kwargs.values()])
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # the sandbox wraps str.format
        if isinstance(owner, str | bytes):
            with _watching():
                return __self._call_str_method(__context, __obj, owner, name, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)  # a method of the data, a macro (counted chunk by chunk), a global
        if owner is not None and name not in _LOOKUPS and isinstance(result, _BUILT_TYPES):  # a copy, ``fromkeys``, ``to_bytes``
            return _built(result)
        return result

    def _call_str_method(self, context, method, owner: str | bytes, name: str, args: tuple, kwargs: dict) -> Any:
        if name in ("format", "format_map") and isinstance(owner, str) and self.is_safe_callable(method):
            if name == "format_map":
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                args, kwargs = (), args[0]
            formatter = _EscapeFormatter(self, escape=owner.escape) if hasattr(owner, "escape") else _Formatter(self)
            return _built(type(owner)(formatter.vformat(owner, args, kwargs)))
        if name == "join" and len(args) == 1 and not kwargs:
            items = bounds.materialized(args[0])
            _build(bounds.join_size(owner, items))
            return super().call(context, method, items)
        size = _str_method_size(owner, name, args, kwargs)
        if size is None:  # at most a few times as long as ``owner`` (``upper``, ``encode``): counted once built
            return _built(super().call(context, method, *args, **kwargs))
        _build(size)
        return super().call(context, method, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _charge()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _charge()
        return super().getitem(obj, argument)


#: what a call or a filter may answer that is weighed before the template gets it
_BUILT_TYPES = (str, bytes, list, tuple, dict, set, frozenset, int)


#: filters that do not print their input (they count, pick, sort or regroup it): the others may
#: not be given a value too heavy to print
_NOT_PRINTING = frozenset(
    {
        "attr",
        "batch",
        "count",
        "default",
        "d",
        "dictsort",
        "first",
        "groupby",
        "items",
        "last",
        "length",
        "list",
        "map",
        "max",
        "min",
        "random",
        "reject",
        "rejectattr",
        "reverse",
        "select",
        "selectattr",
        "slice",
        "sort",
        "unique",
    }
)


#: filters whose output may be much longer than their input
_GROWING = frozenset({"replace", "indent", "wordwrap", "center", "format"})


def _value_size(text: str, args: tuple, kwargs: dict, name: str) -> int | None:
    """At most how long the ``name`` filter makes ``text``, for the filters whose output may be
    much longer than their input; None for the others."""
    arguments = [*args, *kwargs.values()]
    if name == "replace" and len(arguments) >= 2:
        count = arguments[2] if len(arguments) > 2 and isinstance(arguments[2], int) else -1
        return bounds.replace_size(text, str(arguments[0]), str(arguments[1]), count)
    if name == "indent":
        width = arguments[0] if arguments else 4
        return bounds.lines_size(text, len(width) if isinstance(width, str) else max(int(width), 0))
    if name == "wordwrap":
        wrapstring = kwargs.get("wrapstring", args[2] if len(args) > 2 else None)
        return len(text) * (1 + len(wrapstring or "\n"))
    if name == "center":
        return max(len(text), int(arguments[0]) if arguments else 80)
    if name == "format":
        return bounds.percent_size(text, kwargs or args)
    return None


def _bounded_filter(name: str, function):
    """``function``, the ``name`` filter, with its cost checked before it runs and its result
    counted (filters are called directly by compiled templates, not through the sandbox's hooks)."""
    leading = 1 if getattr(function, "jinja_pass_arg", None) else 0  # the context or eval context comes first

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        with _watching():
            return checked(*args, **kwargs)

    def checked(*args: Any, **kwargs: Any) -> Any:
        _charge()
        head, value, rest = args[:leading], args[leading] if len(args) > leading else None, args[leading + 1 :]
        _width_args(name, [*rest, *kwargs.values()])
        if name in ("batch", "slice") and rest and isinstance(rest[0], int) and rest[0] > MAX_RANGE:
            raise TemplateFailure(f"template asks {name} for more than {MAX_RANGE}")
        if name == "round" and abs(_argument(rest, kwargs, 0, "precision", 0)) > MAX_ROUND_DIGITS:
            raise TemplateFailure(f"template asks round for more than {MAX_ROUND_DIGITS} digits")
        if name == "sum" and not isinstance(kwargs.get("start", rest[1] if len(rest) > 1 else 0), int | float):
            raise TemplateFailure("template sum adds numbers only")
        if name == "join":
            value = bounds.materialized(value)
            _build(bounds.join_size(str(rest[0]) if rest else str(kwargs.get("d", "")), value))
            return function(*head, value, *rest, **kwargs)
        if name not in _NOT_PRINTING:
            _checked_weight(value)
            size = _value_size(value if isinstance(value, str) else str(value), rest, kwargs, name) if name in _GROWING else None
            if size is not None:
                _build(size)
                return function(*args, **kwargs)
        result = function(*args, **kwargs)
        return _built(result) if isinstance(result, _BUILT_TYPES) else result

    return bounded


def _argument(rest: tuple, kwargs: dict, position: int, name: str, default: Any) -> Any:
    """A filter's argument after its value, given by position or by name."""
    value = rest[position] if len(rest) > position else kwargs.get(name, default)
    return value if isinstance(value, int) else default


def _tojson(value: Any, indent: int | str | None = None) -> Any:
    """Jinja's ``tojson``, encoded chunk by chunk within the bounds (its indentation is repeated on
    every line, once per level of nesting)."""
    if (len(indent) if isinstance(indent, str) else indent or 0) > MAX_JSON_INDENT:
        raise TemplateFailure(f"template asks tojson for an indent over {MAX_JSON_INDENT}")
    text = bounds.collected(json.JSONEncoder(sort_keys=True, indent=indent).iterencode(value))
    _build(len(text) + 5 * sum(map(text.count, "<>&'")))  # each of them escaped to six characters
    return htmlsafe_json_dumps(value, dumps=lambda *_, **__: text)


def _pprint(value: Any) -> str:
    """Jinja's ``pprint``, written piece by piece within the bounds (a long dict key indents every
    line below it)."""
    sink = bounds.Sink()
    pprint.PrettyPrinter(stream=sink).pprint(value)
    return sink.text()[:-1]


def _dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    return _built(dict(*args, **kwargs))


def _namespace(*args: Any, **kwargs: Any) -> Namespace:
    return _built(Namespace(*args, **kwargs))


_env = _Environment(undefined=StrictUndefined, autoescape=False)
for _name in _REMOVED_GLOBALS:
    del _env.globals[_name]
_env.globals.update(range=_range, dict=_dict, namespace=_namespace)
for _name in _REMOVED_FILTERS:
    del _env.filters[_name]
_env.filters.update(tojson=_tojson, pprint=_pprint)
_env.filters.update({name: _bounded_filter(name, function) for name, function in _env.filters.items()})
# the hooks of ``_Bounded``; taking the context keeps Jinja from running them once at compile time
_env.filters.update(
    {
        name: pass_context(lambda context, *args, hook=hook: hook(*args))
        for name, hook in (("_pb_counted", _counted), ("_pb_concat", _concat), ("_pb_output", _output), ("_pb_built", _built))
    }
)


@functools.lru_cache(maxsize=4096)
def _compiled(source: str):
    if len(source) > MAX_SOURCE_LENGTH:
        raise TemplateFailure(f"template is longer than {MAX_SOURCE_LENGTH} characters")
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
        budget = Budget(until if until is not None else time.monotonic() + DEFAULT_RENDER_SECONDS)
        token = _budget.set(budget)
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
        return Compiled(
            lambda context: {key: render(context) for key, render in renders},
            any(part.templated for part in parts.values()),
            _light_all(list(parts.items()), dict),
        )
    if isinstance(value, list):
        parts = [compile_value(item) for item in value]
        renders = [part._render for part in parts]
        return Compiled(
            lambda context: [render(context) for render in renders],
            any(part.templated for part in parts),
            _light_all(list(enumerate(parts)), lambda pairs: [item for _, item in pairs]),
        )
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
    match = _SINGLE.match(source) if len(source) <= MAX_SOURCE_LENGTH else None
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
        return bounds.collected(compiled.generate(**context))  # refused once it passes ``MAX_LENGTH``
    except TemplateFailure as failure:
        raise TemplateFailure(f"template {value!r} failed: {failure}") from None
    except SecurityError as error:
        raise TemplateFailure(f"template {value!r} refused by the sandbox: {error}") from None
    except TemplateError as error:
        raise TemplateFailure(f"template {value!r} failed: {error}") from None
    except Exception as error:  # an expression's own error (division by zero, a bad index ...)
        raise TemplateFailure(f"template {value!r} failed: {error!r}") from None


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
