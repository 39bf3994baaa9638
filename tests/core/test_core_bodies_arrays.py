"""List fields of request models take JSON arrays only (cattrs read ``"abc"`` as
``["a", "b", "c"]`` and an object as the list of its keys), and a field that is a scalar or an
array (``str | list[str]``) takes either; anything else is a 400 naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from patchbay.core.http.bodies import structure
from patchbay.core.http.errors import ApiError


@dataclass
class Body:
    ids: list[str] | None = None
    status: str | list[str] | None = None
    counts: list[int] = field(default_factory=list)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ids": "abc"}, "ids must be an array"),
        ({"ids": {"a": 1}}, "ids must be an array"),
        ({"ids": ["a", 1]}, "ids[1] must be a string"),
        ({"counts": "12"}, "counts must be an array"),
        ({"status": 5}, "status must be a string or an array"),
        ({"status": [5]}, "status[0] must be a string"),
    ],
)
def test_a_value_that_is_not_an_array_is_refused_naming_the_field(data, message):
    with pytest.raises(ApiError) as refused:
        structure(data, Body)
    assert refused.value.status_code == 400 and refused.value.message == f"Validation failed: {message}"


def test_arrays_and_scalar_or_array_fields_are_read_as_sent():
    assert structure({"ids": ["a", "b"], "status": "new", "counts": [1, 2]}, Body) == Body(ids=["a", "b"], status="new", counts=[1, 2])
    assert structure({"status": ["new", "synced"], "ids": None}, Body) == Body(status=["new", "synced"])
