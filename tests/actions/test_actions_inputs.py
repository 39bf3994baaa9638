"""An action's inputs are checked with the ``jsonschema`` library (Draft 2020-12) before it runs;
the message names the field, and null or empty required inputs count as not given."""

from __future__ import annotations

import pytest

from patchbay.core.actions.inputs import check_inputs
from patchbay.core.errors import Invalid

SCHEMA = {
    "type": "object",
    "required": ["email"],
    "properties": {
        "email": {"type": "string", "minLength": 3},
        "count": {"type": "integer", "minimum": 1},
        "state": {"enum": ["open", "closed"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    },
}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({}, "inputs.email is required"),
        ({"email": ""}, "inputs.email is required"),
        ({"email": None}, "inputs.email is required"),
        ({"email": 5}, "inputs.email: 5 is not of type 'string'"),
        ({"email": "ab"}, "inputs.email: 'ab' is too short"),
        ({"email": "a@b.co", "count": True}, "inputs.count: True is not of type 'integer'"),
        ({"email": "a@b.co", "count": 0}, "inputs.count: 0 is less than the minimum of 1"),
        ({"email": "a@b.co", "state": "gone"}, "inputs.state: 'gone' is not one of ['open', 'closed']"),
        ({"email": "a@b.co", "tags": ["a", 2]}, "inputs.tags.1: 2 is not of type 'string'"),
        ({"email": "a@b.co", "address": {}}, "inputs.address.city is required"),
        ({"email": "a@b.co", "pair": ["a", "b"]}, "inputs.pair.1: 'b' is not of type 'integer'"),
    ],
)
def test_a_bad_input_is_refused_naming_the_field(inputs, message):
    with pytest.raises(Invalid) as caught:
        check_inputs(SCHEMA, inputs)
    assert caught.value.message == message


def test_good_inputs_come_back_as_given():
    inputs = {"email": "a@b.co", "count": 2, "state": "open", "tags": ["x"], "phone": "", "note": None, "pair": ["a", 1]}
    assert check_inputs(SCHEMA, inputs) is inputs


def test_the_subject_is_named_and_must_be_an_object():
    with pytest.raises(Invalid, match=r"^config.email is required$"):
        check_inputs(SCHEMA, {}, "config")
    with pytest.raises(Invalid, match=r"^inputs must be an object$"):
        check_inputs(SCHEMA, ["a@b.co"])
