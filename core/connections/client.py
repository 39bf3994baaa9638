"""The connection client: how actions, triggers, record sources, CRM mappers and CRM destinations
call a provider with a connection's credentials, without ever seeing them.

::

    response = await client.request("GET", "/crm/v3/objects/contacts", params={"limit": 10})
    if response.status == 200:
        contacts = response.json()["results"]

The client injects the credential, refreshes an expiring token (and retries once on a 401), fills
the provider's base URL with the connection's parameters, honours the connection's rate limit and
the provider's back-off, and writes an audit row per call. Get one with :func:`open_client` (a
connection id of the workspace) or :func:`client_for_provider` (the workspace's active connection
of a provider).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy

from patchbay.core.connections.runtime import ConnectionState
from patchbay.core.connections.store import active_connection, load_state
from patchbay.core.errors import Conflict, NotFound, UpstreamFailed
from patchbay.core.outbound import ResponseTooLarge, inflate
from patchbay.core.plugins.provider import Provider
from patchbay.core.proxy import engine

if TYPE_CHECKING:
    from patchbay.core.services import Services


class ProviderResponse:
    """A provider's answer, read in full: ``status``, ``headers``, ``body`` (bytes), ``text`` and
    ``json()``."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: CIMultiDictProxy | Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON (``None`` for an empty body); ``ValueError`` when it is not JSON."""
        return json.loads(self.body) if self.body.strip() else None

    def __repr__(self) -> str:
        return f"<ProviderResponse {self.status} {len(self.body)} bytes>"


class ConnectionClient:
    """Calls one provider with one connection's credentials (see the module docstring)."""

    def __init__(self, services: Services, state: ConnectionState, provider: Provider, *, source: str = "client") -> None:
        self._services = services
        self._state = state
        self._source = source
        self.provider = provider

    @property
    def connection_id(self) -> str:
        return self._state.id

    @property
    def workspace_id(self) -> str:
        return self._state.workspace_id

    @property
    def metadata(self) -> dict[str, Any]:
        return self._state.metadata

    @property
    def params(self) -> dict[str, Any]:
        return self._state.params

    @property
    def base_url(self) -> str:
        """The provider's API base URL for this connection (parameters filled in)."""
        return engine.base_url(self._services, self._state, self.provider)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> ProviderResponse:
        """Call ``path`` (relative to the base URL, or an absolute URL on its host) and answer the
        provider's response, whatever its status. ``json`` is sent as a JSON body, ``data`` as a
        form (a mapping) or raw bytes/text.

        :raises patchbay.core.errors.DomainError: the call could not be made (connection invalid,
            rate limited beyond the wait allowed, provider unreachable, target refused).
        """
        outgoing = CIMultiDict(headers or {})
        outgoing.setdefault("Accept-Encoding", "gzip, deflate")
        body: bytes | None = None
        if json is not None:
            body = _json_bytes(json)
            outgoing.setdefault("Content-Type", "application/json")
        elif isinstance(data, Mapping):
            from urllib.parse import urlencode

            body = urlencode({k: v for k, v in data.items() if v is not None}, doseq=True).encode()
            outgoing.setdefault("Content-Type", "application/x-www-form-urlencoded")
        elif isinstance(data, str):
            body = data.encode()
        elif data is not None:
            body = bytes(data)
        query = [(str(k), _query_value(v)) for k, v in (params or {}).items() if v is not None]
        self._state, response = await engine.send(
            self._services, self._state, method=method.upper(), path=path, query=query or None, headers=outgoing, body=body, source=self._source
        )
        outbound = self._services.outbound
        try:
            raw = await outbound.read_body(response, decode=False)
            encoding = response.headers.get("Content-Encoding")
            if encoding:
                try:
                    raw = inflate(raw, encoding, limit=outbound.limits.max_decompressed_bytes)
                except zlib.error:
                    pass  # a body that is not what its Content-Encoding says is answered as it came
        except ResponseTooLarge as error:
            raise UpstreamFailed(f"{self.provider.display_name} answered too large a body: {error}") from None
        except (aiohttp.ClientError, TimeoutError) as error:  # cut or silent before the body's end
            raise UpstreamFailed(f"{self.provider.display_name}'s answer broke off: {error or 'nothing arrived in time'}") from None
        finally:
            response.release()
        return ProviderResponse(response.status, response.headers, raw)

    async def get(self, path: str, **kwargs: Any) -> ProviderResponse:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> ProviderResponse:
        return await self.request("POST", path, **kwargs)

    def __repr__(self) -> str:
        return f"<ConnectionClient {self.provider.name} {self.connection_id}>"


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), default=str).encode()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def open_client(services: Services, *, workspace_id: str, connection_id: str, source: str = "client") -> ConnectionClient:
    """A client of the workspace's connection ``connection_id``; 404 ``Connection not found`` when
    it does not exist or belongs to another workspace; 409 when it is disconnected or invalid."""
    state = await load_state(services, connection_id, workspace_id=workspace_id)
    if state.status in ("disconnected", "invalid"):
        raise Conflict(f"Connection {connection_id} is {state.status}; reconnect it")
    return ConnectionClient(services, state, engine.provider_of(services, state), source=source)


async def active_connection_id(services: Services, *, workspace_id: str, provider_name: str) -> str:
    """The id of the workspace's most recently connected active connection of ``provider_name``;
    404 ``No active <provider> connection`` when there is none."""
    async with services.db.session(tenant=workspace_id) as session:
        found = await active_connection(session, provider_name)
    if found is None:
        raise NotFound(f"No active {provider_name} connection")
    return found.id


async def client_for_provider(services: Services, *, workspace_id: str, provider_name: str, source: str = "client") -> ConnectionClient:
    """A client of the workspace's most recently connected active connection of ``provider_name``;
    404 ``No active <provider> connection`` when there is none."""
    connection_id = await active_connection_id(services, workspace_id=workspace_id, provider_name=provider_name)
    return await open_client(services, workspace_id=workspace_id, connection_id=connection_id, source=source)


def client_for_state(services: Services, state: ConnectionState, provider: Provider, *, source: str = "client") -> ConnectionClient:
    """A client over an in-memory state (credentials being validated before they are stored)."""
    return ConnectionClient(services, state, provider, source=source)
