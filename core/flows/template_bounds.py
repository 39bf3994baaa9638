"""What one template render may cost, and the checks that keep it there.

Every render has a :class:`Budget`: ``MAX_OPERATIONS`` operations (loop iterations, calls, lookups,
operators, output chunks), a wall-clock deadline (the end of the step's timeout) and
``MAX_RENDER_CPU_SECONDS`` of its thread's CPU time. The sandbox's hooks charge the budget; a
profile hook installed for the render (:meth:`Budget.watching`) also checks it inside the Python
code of filters and methods (a sort's key function, ``wordwrap``), so a render stops at its bound
instead of running on after its step has failed, holding a render thread.

Sizes are checked before anything is allocated: a string may not grow past ``MAX_LENGTH``
characters, a container a template builds may not *weigh* more than ``MAX_LENGTH`` (its items
counted as often as they are referenced, so a list of a million references to a long string is as
heavy as the string it prints to), and all the strings, containers and output one render builds
together may not pass ``MAX_RENDER_LENGTH``. Past any bound the render fails with
:class:`TemplateFailure`, saying which bound.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
import sys
import time
from collections.abc import ItemsView, Iterable, Iterator, KeysView, ValuesView
from typing import Any

from jinja2.utils import Namespace

MAX_OPERATIONS = 1_000_000
#: characters of one string, or weight of one container, a template builds
MAX_LENGTH = 1_000_000
#: characters of one template's source: compiling takes about a hundred bytes a character, before
#: any render bound applies
MAX_SOURCE_LENGTH = 100_000
#: characters (and container weight) one render builds in all, its output included
MAX_RENDER_LENGTH = 8_000_000
#: CPU time of one render, whatever its step's timeout: render threads share one interpreter lock,
#: so a step that needs a render thread waits at most about ``RENDER_THREADS`` times this
MAX_RENDER_CPU_SECONDS = 0.5
MAX_INT_BITS = 4096
#: digits of a ``round``: ``10 ** digits`` stays within ``MAX_INT_BITS``
MAX_ROUND_DIGITS = MAX_INT_BITS * 3 // 10
#: characters of one level of ``tojson`` indentation (repeated on every line, once per level)
MAX_JSON_INDENT = 16
#: items of a ``range()``
MAX_RANGE = 10_000
#: width or precision of one formatted field
MAX_WIDTH = 9999
#: profile events between two looks at the clocks
_EVENTS_PER_CHECK = 256
#: items a weighing walks between two charges to the budget
_VISITS_PER_CHARGE = 4096
_SPEC_NUMBERS = re.compile(r"\d+")
#: a ``%`` conversion specifier: its flags, width and precision, then its type
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")


class TemplateFailure(ValueError):
    """A template failed to compile or render; the message says which and why."""


class Stopped(BaseException):
    """Raised by the profile hook: a BaseException, so the ``except Exception`` of a filter's own
    code cannot swallow it; the render turns it into :class:`TemplateFailure`."""


class Budget:
    """One render's allowance of operations, time, CPU and built characters."""

    __slots__ = ("built", "cpu_until", "events", "failure", "left", "until")

    def __init__(self, until: float) -> None:
        self.left = MAX_OPERATIONS
        self.until = until
        self.cpu_until = time.thread_time() + MAX_RENDER_CPU_SECONDS
        self.built = 0
        self.events = 0
        self.failure: str | None = None

    def _fail(self, reason: str) -> TemplateFailure:
        self.failure = self.failure or reason
        return TemplateFailure(self.failure)

    def _check_clocks(self) -> None:
        if self.failure is not None:
            raise TemplateFailure(self.failure)
        if time.monotonic() > self.until:
            raise self._fail("template rendering ran past the step's timeout")
        if time.thread_time() > self.cpu_until:
            raise self._fail(f"template rendering used more than {MAX_RENDER_CPU_SECONDS:g}s of CPU")

    def charge(self, amount: int = 1) -> None:
        self.left -= amount
        if self.left < 0:
            raise self._fail(f"template work exceeded {MAX_OPERATIONS} operations")
        self.events += amount
        if self.events >= _EVENTS_PER_CHECK or self.failure is not None:
            self.events = 0
            self._check_clocks()

    def build(self, size: int) -> None:
        """Account for a value of ``size`` characters (or weight) about to be built."""
        if size > MAX_LENGTH:
            raise self._fail(f"template value would be longer than {MAX_LENGTH}")
        self.built += size
        if self.built > MAX_RENDER_LENGTH:
            raise self._fail(f"template rendering would build more than {MAX_RENDER_LENGTH} characters")
        self.charge(1 + size // 4096)

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        self.events += 1
        if self.events >= _EVENTS_PER_CHECK:
            self.events = 0
            try:
                self._check_clocks()
            except TemplateFailure as failure:
                raise Stopped(str(failure)) from None

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Check this budget inside the Python code the render calls (filters, key functions)."""
        previous = sys.getprofile()
        sys.setprofile(self._profile)
        try:
            yield
        except Stopped as stop:
            raise TemplateFailure(str(stop)) from None
        finally:
            sys.setprofile(previous)


#: the budget of the render under way in this thread (or task), if any
current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("template_budget", default=None)


def charge(amount: int = 1) -> None:
    budget = current.get()
    if budget is not None:
        budget.charge(amount)


def build(size: int) -> None:
    """A value of ``size`` characters (or weight) is about to be built: refused past the bounds
    (outside a render, past ``MAX_LENGTH``)."""
    budget = current.get()
    if budget is not None:
        budget.build(size)
    elif size > MAX_LENGTH:
        raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")


def weight(value: Any, limit: int = MAX_LENGTH) -> int:
    """What ``value`` costs to print, compare or copy: characters of strings, digits of numbers,
    and one per item of a container plus its items' weights, counted each time they are
    referenced. Stops counting past ``limit`` (answering more than it), so a container of shared
    references weighs what it would print to without being walked for as long; the items walked
    are charged to the render's budget."""
    if type(value) is str:
        return len(value)
    total, visits, stack = 0, 0, [value]
    while stack and total <= limit:
        visits += 1
        if visits == _VISITS_PER_CHARGE:
            charge(visits)
            visits = 0
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, list | tuple | set | frozenset | KeysView | ValuesView | ItemsView):
            total += len(item) + 1
            stack.extend(itertools.islice(item, limit - total + 1))
        elif isinstance(item, dict):
            total += len(item) + 1
            stack.extend(itertools.islice(itertools.chain.from_iterable(item.items()), limit - total + 1))
        elif isinstance(item, Namespace):
            stack.append(item._Namespace__attrs)  # type: ignore[attr-defined]
        else:  # a float, None, a macro, a loop: short when printed
            total += 16
    charge(visits)
    return total


def built(value: Any) -> Any:
    """``value``, just built by the template (a literal, a filter's or a call's result): refused
    when it weighs more than the bounds allow, or is a number past ``MAX_INT_BITS`` (big-number
    division and rounding take time quadratic in its size, in one call nothing interrupts)."""
    if isinstance(value, int):
        number(value)
        return value
    build(weight(value))
    return value


def number(value: int) -> int:
    """``value``, refused past ``MAX_INT_BITS``."""
    if value.bit_length() > MAX_INT_BITS:
        raise TemplateFailure(f"template number would be larger than {MAX_INT_BITS} bits")
    return value


class Sink:
    """Text written piece by piece (by a printer or an encoder), refused as soon as it would pass
    ``MAX_LENGTH``, before the piece is kept."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0

    def write(self, text: str) -> None:
        self.length += len(text)
        if self.length > MAX_LENGTH:
            raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


def collected(chunks: Iterable[str]) -> str:
    """``chunks`` joined, refused once they pass ``MAX_LENGTH``."""
    sink = Sink()
    for chunk in chunks:
        sink.write(chunk)
    return sink.text()


def bounded_range(*args: int) -> range:
    """``range()`` of at most ``MAX_RANGE`` items."""
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise TemplateFailure(f"template range would have more than {MAX_RANGE} items")
    return numbers


# -- sizes of results, known before they are built ---------------------------------------------


def _check_width(spec_numbers: Iterable[str]) -> None:
    if any(int(number) > MAX_WIDTH for number in spec_numbers):
        raise TemplateFailure(f"template format asks for a width or precision over {MAX_WIDTH}")


def percent_size(template: str, values: Any) -> int:
    """At most how long ``template % values`` is; refuses a width or precision over ``MAX_WIDTH``."""
    specs = _PERCENT_SPEC.findall(template)
    widths = [number for spec in specs for number in spec if number]
    if "*" in widths:
        raise TemplateFailure("template % format takes its width from an argument")
    _check_width(widths)
    each = 6 * weight(values) + 2  # repr of a string escapes each character in at most 4, plus quotes
    uses = 1 if isinstance(values, tuple) else len(specs)  # a tuple's items are used once each; a mapping's any number of times
    return len(template) + uses * each + sum(map(int, widths))


def join_size(separator: str, items: list[Any]) -> int:
    return weight(items) + max(len(items) - 1, 0) * len(separator)


def replace_size(text: str, old: str, new: str, count: int = -1) -> int:
    found = len(text) + 1 if old == "" else text.count(old)
    if count is not None and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def lines_size(text: str, per_line: int) -> int:
    """``text`` with ``per_line`` characters added to each of its lines."""
    return len(text) + (text.count("\n") + 1) * per_line


def materialized(items: Iterable[Any]) -> list[Any]:
    """``items`` as a list, refused past ``MAX_LENGTH`` items before taking more."""
    if isinstance(items, list):
        return items
    taken = list(itertools.islice(items, MAX_LENGTH + 1))
    if len(taken) > MAX_LENGTH:
        raise TemplateFailure(f"template value would be longer than {MAX_LENGTH}")
    return built(taken)


def spec_widths(format_spec: str) -> None:
    """Refuse a ``str.format`` field spec with a width or precision over ``MAX_WIDTH``."""
    _check_width(_SPEC_NUMBERS.findall(format_spec))
