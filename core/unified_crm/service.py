"""Reading a CRM live through a connection, in the unified shape (``models``).

The provider's own paging token is wrapped into an opaque ``nextCursor`` (base64url JSON naming the
provider and resource), so a cursor of one CRM or resource is refused by another with 400 instead of
being sent to the wrong API. A mapper that fails (the CRM answered an error, an unexpected body)
answers 502 naming the provider; connection problems keep the connection client's status.

An item id comes from the caller's URL and the mappers paste it into the provider's path, so the core
hands them an id that is already one safe path segment (:func:`path_segment`): every character but
the unreserved ones percent-encoded, and the dot segments refused. A mapper cannot forget it, and an
id cannot move the call to another path or add a query under the connection's token.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import select

from patchbay.core.connections.models import ACTIVE_STATUSES, Connection
from patchbay.core.errors import DomainError, Invalid, NotFound, UpstreamFailed
from patchbay.core.unified_crm.models import RESOURCES, unify

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)


def encode_cursor(provider: str, resource: str, cursor: Any) -> str | None:
    if cursor is None:
        return None
    raw = json.dumps({"p": provider, "r": resource, "c": cursor}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(provider: str, resource: str, token: str | None) -> Any:
    if not token:
        return None
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise Invalid("Query parameter 'cursor' is not a cursor of this API") from None
    if not isinstance(body, dict) or body.get("p") != provider or body.get("r") != resource or "c" not in body:
        raise Invalid("Query parameter 'cursor' belongs to another provider or resource")
    return body["c"]


def path_segment(item_id: str) -> str:
    """``item_id`` as one path segment: percent-encoded (``/``, ``?``, ``#``, ``%`` included); 400
    for an empty id or a dot segment (``.``, ``..``), which a URL resolves into another path."""
    if item_id in ("", ".", ".."):
        raise Invalid(f"Not an item id: {item_id!r}")
    return quote(item_id, safe="")


def supported(services: Services) -> list[dict[str, Any]]:
    """The CRM providers with a unified mapper (and an installed definition)."""
    registry = services.registry
    result = []
    for name in sorted(registry.objects("crm_mappers")):
        provider = registry.provider(name)
        if provider is None:
            continue
        mapper = registry.get("crm_mappers", name)
        resources = [r for r in getattr(mapper, "resources", RESOURCES) if r in RESOURCES]
        result.append({"name": name, "displayName": provider.display_name, "category": provider.category, "resources": resources})
    return result


async def _connection_id(services: Services, workspace_id: str, connection_id: str | None) -> str:
    if connection_id:
        return connection_id
    mappers = list(services.registry.objects("crm_mappers"))
    async with services.db.session(tenant=workspace_id) as session:
        found = await session.scalar(
            select(Connection.id)
            .where(Connection.provider.in_(mappers), Connection.status.in_(ACTIVE_STATUSES))
            .order_by(Connection.connected_at.desc().nulls_last(), Connection.created_at.desc())
            .limit(1)
        )
    if found is None:
        raise NotFound("No active CRM connection; pass connectionId")
    return found


async def _open(services: Services, workspace_id: str, connection_id: str | None, resource: str):
    from patchbay.core.connections.client import open_client

    if resource not in RESOURCES:
        raise NotFound(f"Unknown CRM resource: {resource}")
    client = await open_client(
        services, workspace_id=workspace_id, connection_id=await _connection_id(services, workspace_id, connection_id), source="unified-crm"
    )
    provider = client.provider.name
    mapper = services.registry.get("crm_mappers", provider)
    if mapper is None:
        raise Invalid(f"Provider {provider} has no unified CRM support (see /api/unified/crm/providers)")
    if resource not in getattr(mapper, "resources", RESOURCES):
        raise Invalid(f"Provider {provider} does not offer unified {resource}")
    return client, provider, mapper


async def list_items(services: Services, *, workspace_id: str, connection_id: str | None, resource: str, limit: int, cursor: str | None) -> dict[str, Any]:
    client, provider, mapper = await _open(services, workspace_id, connection_id, resource)
    provider_cursor = decode_cursor(provider, resource, cursor)
    try:
        items, next_cursor = await mapper.list(client, resource, limit, provider_cursor)
        data = [unify(resource, item, provider) for item in items]
    except DomainError:
        raise
    except Exception as error:  # the CRM's error or an unexpected answer, reported by the mapper
        log.info("unified %s list from %s failed: %r", resource, provider, error)
        raise UpstreamFailed(f"{provider} request failed: {error}") from None
    return {"data": data, "nextCursor": encode_cursor(provider, resource, next_cursor)}


async def get_item(services: Services, *, workspace_id: str, connection_id: str | None, resource: str, item_id: str) -> dict[str, Any]:
    segment = path_segment(item_id)
    client, provider, mapper = await _open(services, workspace_id, connection_id, resource)
    try:
        item = await mapper.get(client, resource, segment)
        result = unify(resource, item, provider) if item is not None else None
    except DomainError:
        raise
    except Exception as error:
        log.info("unified %s get from %s failed: %r", resource, provider, error)
        raise UpstreamFailed(f"{provider} request failed: {error}") from None
    if result is None:
        raise NotFound(f"{resource[:-1].capitalize() if resource != 'companies' else 'Company'} not found: {item_id}")
    return result
