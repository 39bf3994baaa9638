"""The resolver every process reads stored integrations through: a change written by another
``Services`` on the same database (another process) is used on the next call, and callers that
arrive together share one read of the version counter."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy.exc import OperationalError

from patchbay.core.connections.runtime import ConnectionState
from patchbay.core.integrations import service as integrations
from patchbay.core.services import build_services

pytestmark = pytest.mark.both_databases


def _state(workspace_id: str = "w1") -> ConnectionState:
    return ConnectionState(
        id="c1",
        workspace_id=workspace_id,
        provider="airtable-pat",
        status="connected",
        credentials={},
        params={},
        metadata={},
        scopes=[],
        expires_at=None,
        oauth_app=None,
    )


async def test_a_write_by_another_process_is_used_on_the_next_call(make_settings, database_url):
    one, other = build_services(make_settings(database_url=database_url)), build_services(make_settings(database_url=database_url))
    async with one.running(migrate=False), other.running(migrate=False):
        one.integrations.window = 0  # every call reads the version (the window has its own test)
        provider = one.registry.provider("airtable-pat")
        assert await integrations.override_base_url(one, _state(), provider) is None  # read and cached by `one`
        await integrations.save(other, workspace_id=None, provider_name="airtable-pat", body={"apiBaseUrl": "https://eu.airtable.example/v0"})
        assert await integrations.override_base_url(one, _state(), provider) == "https://eu.airtable.example/v0"
        await integrations.save(other, workspace_id=None, provider_name="airtable-pat", body={"apiBaseUrl": "https://us.airtable.example"})
        assert await integrations.override_base_url(one, _state(), provider) == "https://us.airtable.example"
        await integrations.delete(other, workspace_id=None, provider_name="airtable-pat")
        assert await integrations.override_base_url(one, _state(), provider) is None
        assert (await integrations.deployment_app(one, "github")) is None
        await integrations.save(other, workspace_id=None, provider_name="github", body={"clientId": "id-1", "clientSecret": "s-1"})
        app = await integrations.deployment_app(one, "github")
        assert (app.client_id, app.client_secret, app.source) == ("id-1", "s-1", "deployment")


async def test_callers_arriving_together_share_one_version_read(make_settings, database_url):
    services = build_services(make_settings(database_url=database_url))
    async with services.running(migrate=False):
        provider = services.registry.provider("airtable-pat")
        runtime = services.integrations
        runtime.window = 0
        await integrations.override_base_url(services, _state(), provider)
        before = runtime.version_reads
        await asyncio.gather(*(integrations.override_base_url(services, _state(), provider) for _ in range(50)))
        assert runtime.version_reads - before == 1
        await integrations.override_base_url(services, _state(), provider)
        assert runtime.version_reads - before == 2, "a later call reads the version again"


async def test_a_version_read_is_trusted_for_the_window_then_read_again(make_settings, database_url):
    one, other = build_services(make_settings(database_url=database_url)), build_services(make_settings(database_url=database_url))
    async with one.running(migrate=False), other.running(migrate=False):
        provider = one.registry.provider("airtable-pat")
        one.integrations.window = 0.5
        assert await integrations.override_base_url(one, _state(), provider) is None
        reads = one.integrations.version_reads
        await integrations.save(other, workspace_id=None, provider_name="airtable-pat", body={"apiBaseUrl": "https://eu.airtable.example"})
        started = time.monotonic()
        seen = await integrations.override_base_url(one, _state(), provider)
        if time.monotonic() - started < 0.5:
            assert seen is None and one.integrations.version_reads == reads, "inside the window: no read, the value read before"
        deadline = time.monotonic() + 10
        while seen is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            seen = await integrations.override_base_url(one, _state(), provider)
        assert seen == "https://eu.airtable.example" and one.integrations.version_reads > reads


async def test_when_the_database_is_out_of_reach_the_values_read_before_serve(make_settings, database_url, monkeypatch):
    services = build_services(make_settings(database_url=database_url))
    async with services.running(migrate=False):
        provider = services.registry.provider("airtable-pat")
        services.integrations.window = 0  # every call reads the version: the read is what fails
        await integrations.save(services, workspace_id=None, provider_name="airtable-pat", body={"apiBaseUrl": "https://eu.airtable.example"})
        assert await integrations.override_base_url(services, _state(), provider) == "https://eu.airtable.example"

        async def unreachable() -> int:
            raise OperationalError("SELECT", {}, OSError("connection refused"))

        monkeypatch.setattr(services.integrations, "_read_version", unreachable)
        assert await integrations.override_base_url(services, _state(), provider) == "https://eu.airtable.example"
        with pytest.raises(OperationalError):
            await integrations.override_base_url(services, _state("another-workspace"), provider)  # nothing read before: the error
