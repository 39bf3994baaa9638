"""Unit-test stand-ins for what a pack's objects are handed: a scripted connection client that
records its calls, the objects a pack registers, and a sample lead for CRM destinations.

For a test that needs no server: the pack acceptance suite and ``FakeProviderAPI`` cover the
wiring (credential injection, the registry, HTTP); these let a pack's own tests state only its data::

    client = FakeClient((201, {"id": "51"}))
    assert await AcmeDestination().push(client, sample_lead()) == "51"
    assert client.calls[0].json == {...}

    poll = registered(acme_pack, "triggers", "acme", "new_item").poll
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from patchbay.core.connections.client import ProviderResponse

#: Hooks whose objects are told apart by an attribute besides the provider name.
_NAMED_BY = {"actions": "name", "triggers": "name", "record_sources": "resource_type"}


class ClientCall(NamedTuple):
    """One request made through a :class:`FakeClient`."""

    method: str
    path: str
    params: dict[str, Any] | None
    json: Any
    data: Any
    headers: dict[str, str] | None


class FakeClient:
    """Stands in for the :class:`patchbay.ConnectionClient` handed to an action, trigger, CRM mapper
    or destination. Answers each request with the next of ``answers`` (``(status, json_body)``
    pairs, in order; running out fails the test), or, given ``respond``, with 200 and
    ``respond(call)`` as the body. Answers are :class:`patchbay.ProviderResponse` objects (``status``,
    ``headers``, ``text``, ``json()``); a ``None`` body is an empty one. Every request is recorded in
    ``calls`` as a :class:`ClientCall`."""

    def __init__(self, *answers: tuple[int, Any], respond: Callable[[ClientCall], Any] | None = None) -> None:
        if answers and respond is not None:
            raise TypeError("FakeClient takes answers or respond, not both")
        self.answers = list(answers)
        self.respond = respond
        self.calls: list[ClientCall] = []

    async def request(self, method: str, path: str, *, params=None, json=None, data=None, headers=None) -> ProviderResponse:
        call = ClientCall(method, path, params, json, data, headers)
        self.calls.append(call)
        if self.respond is not None:
            return _response(200, self.respond(call))
        if not self.answers:
            raise AssertionError(f"FakeClient has no answer left for {method} {path}")
        return _response(*self.answers.pop(0))


def _response(status: int, body: Any) -> ProviderResponse:
    raw = b"" if body is None else json.dumps(body).encode()
    return ProviderResponse(status, {"Content-Type": "application/json"}, raw)


def registered(plugin: Any, kind: str, key: str, name: str | None = None) -> Any:
    """What ``plugin`` (a pack module or plugin object) registers with its ``register_<kind>`` hook
    under ``key`` (a provider name): the object itself, or for ``actions``, ``triggers`` and
    ``record_sources`` the one whose ``name`` (``resource_type``) is ``name``. ``LookupError`` when
    the pack registers no such object."""
    found: list[Any] = []
    getattr(plugin, f"register_{kind}")(register=lambda k, obj: found.append(obj) if k == key else None)
    if kind in _NAMED_BY:
        found = [obj for obj in found if getattr(obj, _NAMED_BY[kind]) == name]
    if not found:
        raise LookupError(f"register_{kind} registers nothing for {key!r}" + (f" named {name!r}" if name else ""))
    return found[0]


def sample_lead(**changes: Any) -> dict[str, Any]:
    """A lead as a CRM destination's ``push(client, lead)`` receives it, with ``changes`` applied."""
    lead = {
        "id": "lead-1",
        "provider": "facebook",
        "externalId": "fb-lead-1",
        "formId": "form-1",
        "email": "ada@example.com",
        "phone": "+442079460958",
        "firstName": "Ada",
        "lastName": "Lovelace",
        "fullName": "Ada Lovelace",
        "customFields": {"company_name": "Analytical"},
        "capturedAt": "2026-11-01T10:00:00Z",
    }
    return {**lead, **changes}
