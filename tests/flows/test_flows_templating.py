"""Step values are sandboxed Jinja2 templates; a lone ``{{ expr }}`` keeps its type."""

from __future__ import annotations

import pytest

from patchbay.core.flows.template_bounds import MAX_RENDER_CPU_SECONDS
from patchbay.core.flows.templating import (
    HEAVY,
    LIGHT_STRING,
    TemplateFailure,
    compile_value,
    evaluate,
    light_path,
    render_value,
)
from patchbay.providers.meta.templates import LEAD

CONTEXT = {"trigger": {"amount": 1250, "tags": ["a", "b"], "user": {"name": "Ada"}, "ok": True}, "steps": {"t": {"output": {"n": 2}}}}


def test_a_lone_expression_keeps_its_type():
    assert render_value("{{ trigger.amount }}", CONTEXT) == 1250
    assert render_value("  {{ trigger.tags }} ", CONTEXT) == ["a", "b"]
    assert render_value("{{ trigger.user }}", CONTEXT) == {"name": "Ada"}
    assert render_value("{{ trigger.ok }}", CONTEXT) is True
    assert render_value("{{ steps.t.output.n * 2 }}", CONTEXT) == 4
    assert render_value("{{ none }}", CONTEXT) is None


def test_mixed_text_renders_to_a_string_and_containers_render_inside():
    assert render_value("Total: {{ trigger.amount }}", CONTEXT) == "Total: 1250"
    assert render_value("{{ trigger.amount }}{{ trigger.amount }}", CONTEXT) == "12501250"
    assert render_value({"a": ["{{ trigger.user.name | upper }}", 3], "b": "plain"}, CONTEXT) == {"a": ["ADA", 3], "b": "plain"}


def test_a_bare_condition_is_an_expression():
    assert evaluate("trigger.amount > 1000", CONTEXT) is True
    assert evaluate("trigger.amount > 2000", CONTEXT) is False


@pytest.mark.parametrize(
    "escape",
    [
        "{{ trigger.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ trigger.user.__init__.__globals__ }}",
        "value: {{ cycler.__init__.__globals__.os }}",
        "{{ (lambda: 1).__code__ }}",
        "{{ trigger.tags.append(1) }}",
    ],
)
def test_the_sandbox_refuses_attribute_escapes(escape):
    with pytest.raises(TemplateFailure):
        render_value(escape, CONTEXT)
    assert CONTEXT["trigger"]["tags"] == ["a", "b"]


def test_a_missing_value_fails_loudly_unless_defaulted():
    with pytest.raises(TemplateFailure, match="nope"):
        render_value("{{ trigger.nope }}", CONTEXT)
    assert render_value("{{ trigger.nope | default('x') }}", CONTEXT) == "x"


def test_the_system_lead_template_reads_meta_field_data():
    payload = {"leadgen_id": "L1", "field_data": [{"name": "email", "values": ["a@example.com"]}, {"name": "full_name", "values": ["A"]}]}
    output = render_value(LEAD["output"], {"trigger": payload, "steps": {}})
    assert output["email"] == "a@example.com" and output["leadId"] == "L1"


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{{ 'x' * 10**9 }}", "longer than"),
        ("{{ [1] * 10**8 }}", "longer than"),
        ("{{ 9 ** 99999999 }}", "bits"),
        ("{{ 10**2000 * 10**2000 }}", "bits"),
        ("{% set ns = namespace(x='ab') %}{% for i in range(60) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}", "longer than"),
        ("{% set ns = namespace(x='ab') %}{% for i in range(60) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x }}", "longer than"),
        ("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", "operations|CPU"),
        ("{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}", "operations|CPU"),
        ("{% for i in range(400) %}{{ 'x' * 9999 }}{% endfor %}", "longer than"),
        ("{{ 'x'|center(10**9) }}", "center"),
        ("{{ 'x'.ljust(10**9) }}", "ljust"),
        ("{{ '%0999999999d' % 1 }}", "width"),
        ("{{ '%0999999999d'|format(1) }}", "width"),
        ("{{ '{:>999999999}'.format(1) }}", "width"),
    ],
)
def test_template_work_is_bounded(template, reason):
    with pytest.raises(TemplateFailure, match=reason):
        render_value(template, {"trigger": {}})


def test_bounded_operations_still_work():
    context = {"trigger": {"name": "Ada", "items": [1, 2, 3], "n": 7}}
    assert render_value("{{ trigger.name ~ '!' * 3 }}", context) == "Ada!!!"
    assert render_value("{{ trigger.n ** 2 }}", context) == 49
    assert render_value("{% for i in trigger['items'] %}{{ i }}{% endfor %}", context) == "123"
    assert render_value("{{ '%05d'|format(trigger.n) }} {{ 'ab'|center(6) }}", context) == "00007   ab  "


def test_a_render_stops_at_its_deadline():
    import time

    from patchbay.core.flows.templating import deadline

    slow = "{% for i in range(1000) %}{% for j in range(900) %}{% endfor %}{% endfor %}"
    began = time.monotonic()
    with deadline(time.monotonic() + 0.05), pytest.raises(TemplateFailure, match="timeout"):
        render_value(slow, {})
    assert time.monotonic() - began < 5


LIGHT_CONTEXT = {
    "trigger": {
        "email": " Ada@Example.COM ",
        "n": 3,
        "f": 1.5,
        "ok": False,
        "none": None,
        "items": "a key named like a method",
        "list": [1, {"x": "y"}],
        "user": {"name": "Ada"},
        "long": "A" * (LIGHT_STRING + 1),
        "nested": {"__class__": "data"},
    },
    "steps": {"shape": {"output": {"email": "ada@example.com"}, "status": "completed"}},
}


@pytest.mark.parametrize(
    ("source", "light"),
    [
        ("{{ trigger.n }}", True),
        ("{{ trigger.f }}", True),
        ("{{ trigger.ok }}", True),
        ("{{ trigger.none }}", True),
        ("  {{ trigger.email | lower | trim }} ", True),
        ("{{ trigger['email'] | upper }}", True),
        ("{{ trigger['items'] }}", True),
        ("{{ trigger.list[1].x }}", True),
        ("{{ trigger.list.0 }}", True),
        ("{{ trigger.nested['__class__'] }}", True),
        ("{{ steps.shape.output.email }}", True),
        ("{{ trigger.user }}", False),  # a container: copied by the full render
        ("{{ trigger.list }}", False),
        ("{{ trigger.missing }}", False),  # fails: the full render says why
        ("{{ trigger.list[5] }}", False),
        ("{{ trigger.n | lower }}", False),  # a filter on a number: the full render decides
        ("{{ trigger.long | lower }}", False),
        ("{{ range }}", False),  # a global, not data
        ("{{ unknown.x }}", False),
    ],
)
def test_a_light_path_renders_what_the_sandbox_renders_or_defers_to_it(source, light):
    render = light_path(source)
    answer = render(LIGHT_CONTEXT)
    assert (answer is not HEAVY) is light
    if light:
        assert answer == render_value(source, LIGHT_CONTEXT)
        assert type(answer) is type(render_value(source, LIGHT_CONTEXT))


@pytest.mark.parametrize(
    "source",
    [
        "{{ trigger.items }}",  # the dict's method, as the sandbox answers it
        "{{ trigger.__class__ }}",
        "{{ trigger.n + 1 }}",
        "{{ trigger.email | replace('a', 'b') }}",
        "{{ trigger.list[-1] }}",
        "Hello {{ trigger.user.name }}",
        "{{- trigger.n -}}",  # not an expression the full render compiles
        "{% for x in trigger.list %}{{ x }}{% endfor %}",
    ],
)
def test_anything_but_a_path_is_not_light(source):
    assert light_path(source) is None


def test_a_compiled_step_is_light_only_when_every_template_in_it_is():
    assert compile_value({"a": ["{{ trigger.n }}", 3], "b": "plain"}).light(LIGHT_CONTEXT) == {"a": [3, 3], "b": "plain"}
    assert compile_value({"a": "{{ trigger.n }}", "b": "{{ trigger.user }}"}).light(LIGHT_CONTEXT) is HEAVY
    assert compile_value({"a": "{{ trigger.n }}", "b": "n={{ trigger.n }}"}).light is None


#: lists of ten lists, five deep: ``e`` prints to about 160,000 items
NESTED = "".join(f"{{% set {name} = [{','.join([inner] * 10)}] %}}" for name, inner in zip("abcde", "0abcd", strict=True))
#: the worst templates we could write: string growth by every method and filter that grows, shared
#: references printed, literals nested, macros recursing, loops nested, filters slow in one call
WORST = [
    "{{ ('x' * 999999).replace('x', 'x' * 1000) | length }}",
    "{{ ('x' * 999999) | replace('x', 'xx') | length }}",
    "{{ ('x' * 999).join(['y'] * 100000) | length }}",
    "{{ (['x' * 9999] * 99) | join('z' * 9999) | length }}",
    "{{ ('{0}' * 300000).format('x' * 1000) | length }}",
    "{{ ('%s' * 300000) % (('x' * 1000,) * 300000) | length }}",
    "{{ ('%(a)s' * 200000) % {'a': 'x' * 1000} | length }}",
    "{{ ('%9999s' * 100000) | format(*((1,) * 100000)) | length }}",
    "{{ ('x\\n' * 499999) | indent(1000) | length }}",
    "{{ ('x ' * 499999) | wordwrap(1) | length }}",
    "{{ ('x' * 999999) | wordwrap(5) | length }}",
    "{{ ('ab ' * 333333) | title | title | title | title | length }}",  # four passes: well past the CPU bound on any machine
    "{{ ('\\t' * 999999).expandtabs(100) | length }}",
    "{{ 'x'.translate({120: 'y' * 999999}) | length }}",
    "{{ 'xy' | batch(9999, 'y' * 9999) | list | string | length }}",
    "{{ (('x' * 999999) | list) | sort | length }}",
    "{{ ([[0]] * 99999) | sum(start=[]) }}",
    "{{ [[0] * 999999] * 999999 }}",
    "{{ dict(a='x' * 999999, b='x' * 999999) }}",
    "{% set n = namespace(a=1) %}{% set m = namespace(a=n, b=n) %}{% set n.a = 'x' * 999999 %}{{ m | string | length }}",
    NESTED + "{% for i in range(9999) %}{% set f = [e] %}{% endfor %}",
    NESTED + "{% set f = [e,e,e,e,e,e,e,e,e,e] %}{{ f | length }}",
    "{% macro m() %}{% for i in range(9999) %}{{ 'x' * 999999 }}{% endfor %}{% endmacro %}{{ m() | length }}",
    "{% macro f(n) %}{% if n < 30 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(1) }}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "{% for i in range(10000) %}{% for j in range(10000) %}{{ j }}{% endfor %}{% endfor %}",
    "{% set ns = namespace(x='') %}{% for i in range(10000) %}{% set ns.x = ns.x ~ ('x' * 999) %}{% endfor %}",
    "{{ range(10**9) | list | length }}",
    "{{ lipsum(50000) }}",
    "{{ cycler(1, 2) }}",
    "{{ joiner() }}",
    # one C call each, which no hook interrupts: a gigabyte at once, or a big-number operation of seconds
    "{{ (0).to_bytes(999999999, 'big') | length }}",
    "{{ [1, 2] | tojson(indent=999999999) | length }}",
    "{{ {'k' * 99999: 'x\\n' * 400000} | pprint | length }}",
    "{{ 5 | round(-99999999) }}",
    "{{ 5 | round(99999999, 'floor') }}",
    "{{ ('.' * 20000 ~ 'b.') | urlize | length }}",
    "{% set a = ('f' * 999999) | int(base=16) %}{% set b = ('f' * 499999) | int(base=16) %}{{ a // b > 0 }}",
    "{% set a = (1).from_bytes(('x' * 999999).encode(), 'big') %}{% set b = (1).from_bytes(('x' * 499999).encode(), 'big') %}{{ a % b > 0 }}",
    "{{ 0x" + "f" * 500000 + " // 0x" + "f" * 250000 + " > 0 }}",
    "{{ 0x" + "f" * 60000 + " // 0x" + "f" * 30000 + " > 0 }}",
    # compiling takes about a hundred bytes a character of the source
    "{{ '" + "a" * 3000000 + "' | length }}",
    # copies no literal makes, kept alive by a macro's frames
    "{% set big = [0] * 333333 %}{% macro f(n) %}{% set c = big[::-1] %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(250) | length }}",
    "{% set big = [0] * 333333 %}{% macro f(n) %}{% set c = big.copy() %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(250) | length }}",
]
#: what one of them may allocate at its peak, and the CPU it may take (the bound, and the time a
#: single bounded step past it may run before the next check)
WORST_MEMORY = 64 * 1024 * 1024
WORST_CPU_SECONDS = MAX_RENDER_CPU_SECONDS + 0.5


@pytest.mark.parametrize("template", WORST)
@pytest.mark.slow  # each runs a template to its memory or time bound
def test_the_worst_templates_fail_within_the_memory_and_time_bounds(template):
    import time
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(TemplateFailure):
            render_value(template, {"trigger": {}})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the CPU is measured in a render of its own: tracing every allocation slows each step several
    # times over, and a busy machine (CI's parallel workers) more so
    began = time.thread_time()
    with pytest.raises(TemplateFailure):
        render_value(template, {"trigger": {}})
    assert time.thread_time() - began < WORST_CPU_SECONDS
    assert peak < WORST_MEMORY


def test_a_render_that_times_out_stops_inside_a_slow_filter():
    """The deadline is checked inside a filter's own Python code (``title`` calls back per word)."""
    import time

    from patchbay.core.flows.templating import deadline

    began = time.thread_time()
    with deadline(time.monotonic() + 0.05), pytest.raises(TemplateFailure, match="timeout"):
        render_value("{{ ('ab ' * 333333) | title }}", {})
    assert time.thread_time() - began < 0.3


def test_values_within_the_bounds_still_render():
    context = {"trigger": {"words": ["a", "b"], "n": 3}}
    assert render_value("{{ ('ab' * 3).replace('b', 'cc') }}", context) == "accaccacc"
    assert render_value("{{ '-'.join(trigger.words) }} {{ trigger.words | join(', ') }}", context) == "a-b a, b"
    assert render_value("{{ '{0}:{1:>4}'.format('a', trigger.n) }} {{ '%s=%d' % ('n', trigger.n) }}", context) == "a:   3 n=3"
    assert render_value("{{ [trigger.words] * 2 }}", context) == [["a", "b"], ["a", "b"]]
    assert render_value("{{ dict(a=1) }} {{ 'x\ny' | indent(2, true) }} {{ range(3) | list }}", context) == "{'a': 1}   x\n  y [0, 1, 2]"
    assert render_value("{{ [1, 2, 3] | sum }} {{ 'a b' | title }}", context) == "6 A B"
    assert (
        render_value("{{ {'b': [1], 'a': '<'} | tojson(indent=1) }}|{{ {'b': 1, 'a': 2} | pprint }}", context)
        == '{\n "a": "\\u003c",\n "b": [\n  1\n ]\n}|{\'a\': 2, \'b\': 1}'
    )
    assert (
        render_value("{{ 2.555 | round(2, 'floor') }} {{ (255).to_bytes(2, 'big') | list }} {{ [3, 1, 2][::-1] }} {{ 7 // 2 - 1 }}", context)
        == "2.55 [0, 255] [2, 1, 3] 2"
    )
