"""Processes starting together on an empty database all end with the one console client."""

import asyncio

import pytest
from sqlalchemy import func, select

from patchbay.core.console.service import CLIENT_ID, ensure_client
from patchbay.core.identity.models import OidcClient
from patchbay.core.services import build_services


@pytest.mark.both_databases
async def test_processes_making_the_console_client_at_once_all_start(make_settings, database_url):
    processes = [build_services(make_settings(database_url=database_url)) for _ in range(8)]
    for services in processes:  # each connected already, so that their reads overlap
        async with services.db.session() as session:
            await session.execute(select(1))
    await asyncio.gather(*(ensure_client(services) for services in processes))
    async with processes[0].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(OidcClient).where(OidcClient.client_id == CLIENT_ID)) == 1
    for services in processes:
        await services.db.close()
