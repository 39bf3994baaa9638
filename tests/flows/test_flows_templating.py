"""Step values are sandboxed Jinja2 templates; a lone ``{{ expr }}`` keeps its type."""

from __future__ import annotations

import pytest

from patchbay.core.flows.templating import TemplateFailure, evaluate, render_value
from patchbay.core.flows.templates_data import LEAD

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
