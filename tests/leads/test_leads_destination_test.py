"""``POST /crm/{accountId}/test`` answers each destination's check as ``DestinationTest``: what a
destination reports beyond success comes back as ``detail``, of its own shape; a plain success or
a failure carries no ``detail``."""

from __future__ import annotations

from patchbay import Provider, hookimpl
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection


class ReportingDestination:
    """A CRM destination whose check reports the account it reached (``healthy``) or fails."""

    def __init__(self, report):
        self.report = report

    async def push(self, client, lead):
        return "remote-1"

    async def test(self, client):
        if isinstance(self.report, Exception):
            raise self.report
        return self.report


class ReportingPack:
    @hookimpl
    def register_providers(self):
        return [
            Provider(name=name, display_name=name, category="crm", auth_mode="api_key", api_base_url="https://crm.invalid")
            for name in ("reporting_crm", "plain_crm", "broken_crm")
        ]

    @hookimpl
    def register_crm_destinations(self, register):
        register("reporting_crm", ReportingDestination({"portal": 42, "scopes": ["contacts"]}))
        register("plain_crm", ReportingDestination(True))
        register("broken_crm", ReportingDestination(RuntimeError("401 from the CRM")))


async def test_a_destination_check_carries_its_detail(aiohttp_client, make_app):
    app = make_app(plugins=[ReportingPack()])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    connections = {
        name: await add_connection(app, ws["workspace_id"], name, credentials={"api_key": "k"}) for name in ("reporting_crm", "plain_crm", "broken_crm")
    }
    answer = await client.post(f"/crm/{ws['workspace_id']}/test", headers=ws["headers"])
    assert answer.status == 201, await answer.text()
    body = await answer.json()
    by_provider = {result["provider"]: result for result in body["destinations"]}
    assert body["ok"] is False and body["accountId"] == ws["workspace_id"]
    assert by_provider["reporting_crm"] == {
        "connectionId": connections["reporting_crm"],
        "provider": "reporting_crm",
        "ok": True,
        "error": None,
        "detail": {"portal": 42, "scopes": ["contacts"]},
    }
    assert by_provider["plain_crm"] == {"connectionId": connections["plain_crm"], "provider": "plain_crm", "ok": True, "error": None}
    assert by_provider["broken_crm"] == {"connectionId": connections["broken_crm"], "provider": "broken_crm", "ok": False, "error": "401 from the CRM"}
