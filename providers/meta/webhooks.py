"""Meta (Facebook) Lead Ads webhooks for the provider named ``facebook``: the ``hub.challenge``
handshake, ``x-hub-signature-256`` verification with the app secret, routing by page id to the
connection whose metadata holds that ``page_id``, and ``leadgen`` events whose lead details are read
from the Graph API through the page's connection."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from patchbay import InboundEvent, LeadData, WebhookHandler, hmac_sha256_hex, signatures_match

PROVIDER = "facebook"
LEAD_FIELDS = "id,created_time,field_data,form_id,ad_id,adset_id,campaign_id,platform"
PAGE_SIZE = 100
#: the Graph API reads at most 50 objects by ``?ids=`` in one call
IDS_PER_REQUEST = 50


async def _get(client: Any, path: str, params: Mapping[str, Any]) -> Any:
    response = await client.request("GET", path, params=dict(params))
    if not 200 <= response.status < 300:
        raise RuntimeError(f"Graph API GET {path} answered {response.status}: {response.text[:300]}")
    return response.json()


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value:
        try:
            return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").astimezone(UTC)
        except ValueError:
            return None
    return None


def lead_from_graph(data: Mapping[str, Any]) -> LeadData:
    """A Graph API lead (``field_data`` of ``{name, values}``) as :class:`LeadData`."""
    fields: dict[str, Any] = {}
    for item in data.get("field_data") or ():
        values = item.get("values") or []
        fields[str(item.get("name"))] = values[0] if len(values) == 1 else values
    return LeadData(external_id=str(data["id"]), fields=fields, form_id=data.get("form_id"), created_at=_parse_time(data.get("created_time")), raw=dict(data))


class MetaWebhooks(WebhookHandler):
    routing_metadata_keys = ("page_id",)

    def verify(self, request, secret):
        header = request.headers.get("x-hub-signature-256", "")
        if not secret or not header.startswith("sha256="):
            return False
        return signatures_match(hmac_sha256_hex(secret, request.body), header[len("sha256=") :])

    def events(self, payload):
        if not isinstance(payload, dict):
            return []
        found = []
        for entry in payload.get("entry") or ():
            if not isinstance(entry, dict):
                continue
            changes = entry.get("changes")
            if not changes:
                found.append(InboundEvent(type=str(payload.get("object") or "unknown"), data={**entry, "page_id": entry.get("id")}))
                continue
            for change in changes:
                value = dict(change.get("value") or {})
                field = str(change.get("field") or "unknown")
                value.setdefault("page_id", entry.get("id"))
                if value.get("page_id") is not None:
                    value["page_id"] = str(value["page_id"])
                external = value.get("leadgen_id") if field == "leadgen" else None
                found.append(InboundEvent(type=field, data=value, external_id=str(external) if external else None))
        return found

    def routing_keys(self, event):
        page_id = event.data.get("page_id")
        return [("page_id", str(page_id))] if page_id else []

    def lead_ref(self, event):
        return event.external_id if event.type == "leadgen" else None

    async def fetch_lead(self, client, event):
        data = await _get(client, f"/{event.external_id}", {"fields": LEAD_FIELDS})
        return lead_from_graph(data)

    lead_batch_size = IDS_PER_REQUEST

    async def fetch_leads(self, client, events):
        """Several leads in one Graph API call (``GET /?ids=a,b,c``). The Graph API refuses the
        whole call when one id cannot be read, so such a refusal is followed by one call per lead:
        one bad lead costs its own event only."""
        if len(events) == 1:
            return await super().fetch_leads(client, events)
        ids = [str(event.external_id) for event in events]
        response = await client.request("GET", "/", params={"ids": ",".join(dict.fromkeys(ids)), "fields": LEAD_FIELDS})
        if not 200 <= response.status < 300:
            return await super().fetch_leads(client, events)
        found = response.json()
        if not isinstance(found, dict):
            raise RuntimeError(f"Graph API GET /?ids= answered {type(found).__name__}, not an object of leads")
        return [lead_from_graph(found[i]) if isinstance(found.get(i), dict) else LookupError(f"Graph API answered no lead {i}") for i in ids]

    async def list_leads(self, client, metadata, cursor):
        page_id = metadata.get("page_id")
        if not page_id:
            raise ValueError("the connection has no page_id in its metadata")
        if cursor is None:
            forms = await _get(client, f"/{page_id}/leadgen_forms", {"fields": "id", "limit": PAGE_SIZE})
            cursor = {"forms": [str(form["id"]) for form in forms.get("data") or ()], "form": 0, "after": None}
        if cursor["form"] >= len(cursor["forms"]):
            return [], None
        params: dict[str, Any] = {"fields": LEAD_FIELDS, "limit": PAGE_SIZE}
        if cursor.get("after"):
            params["after"] = cursor["after"]
        page = await _get(client, f"/{cursor['forms'][cursor['form']]}/leads", params)
        leads = [lead_from_graph(item) for item in page.get("data") or ()]
        after = ((page.get("paging") or {}).get("cursors") or {}).get("after") if (page.get("paging") or {}).get("next") else None
        if after:
            next_cursor = {**cursor, "after": after}
        elif cursor["form"] + 1 < len(cursor["forms"]):
            next_cursor = {**cursor, "form": cursor["form"] + 1, "after": None}
        else:
            next_cursor = None
        return leads, next_cursor

    async def renew(self, client, metadata):
        page_id = metadata.get("page_id")
        if not page_id:
            raise ValueError("the connection has no page_id in its metadata")
        response = await client.request("POST", f"/{page_id}/subscribed_apps", params={"subscribed_fields": "leadgen"})
        if not 200 <= response.status < 300:
            raise RuntimeError(f"Graph API subscribed_apps answered {response.status}: {response.text[:300]}")
        return None  # page subscriptions do not expire; renewal re-asserts them
