"""The proxy's request model: the JSON envelope of ``POST /connect/v1/proxy/{providerType}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ProxyEnvelope:
    """One call to the provider: ``method`` (GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS, any
    case), ``path`` on the provider's API, ``query`` (``params`` is read as its older name),
    ``headers`` and ``body`` (a string is sent as it is, anything else as JSON)."""

    path: str
    method: str = "GET"
    body: Any = None
    headers: dict[str, Any] | None = None
    query: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
