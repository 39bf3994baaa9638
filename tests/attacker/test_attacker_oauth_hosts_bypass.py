"""Attempts to get around the OAuth-host rule of tests/attacker/test_attacker_oauth_hosts.py: a host
value that Python's URL parser (which the check uses) and yarl (which sends) might read differently,
a host given as metadata instead of a parameter, and a workspace that connected with its own app
at its own host and then drops that app so that the deployment's would be used."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("oauth_hosts", Path(__file__).with_name("test_attacker_oauth_hosts.py"))
hosts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hosts)  # tests/ is no package (--import-mode=importlib): load the fixtures by path
tls, attacker, serve = hosts.tls, hosts.attacker, hosts.serve
CLIENT_ID, CLIENT_SECRET, HOST, MY_DOMAIN = hosts.CLIENT_ID, hosts.CLIENT_SECRET, hosts.HOST, hosts.MY_DOMAIN


#: host values (``{netloc}`` is the attacker's host and port) that Python's urlsplit, which checked
#: the host, and yarl, which sends, might read differently: urlsplit reads the host before the first
#: ':' (so the first two named the vouched My Domain host and were accepted by import while login
#: answered 500 on the previous code), yarl refuses those as ports that are not numbers
FORMS = [
    "{my_domain}:{port}.{host}",
    "{my_domain}:{netloc}",
    "{my_domain}\\@{netloc}",
    "{my_domain}@{netloc}",
    "{netloc}\n",
    "{netloc}%2F.my.salesforce.com",
    "{host}\uff0emy.salesforce.com:{port}",
    "[::ffff:{host}]:{port}",
]


@pytest.mark.parametrize("form", FORMS)
async def test_a_host_the_two_url_parsers_might_read_differently_gets_no_operator_secret(serve, attacker, tls, form):
    client = await serve()
    hostname = form.format(my_domain=MY_DOMAIN, host=HOST, port=attacker.server.port, netloc=attacker.netloc)
    login = await client.get("/auth/salesforce/login", params={"hostname": hostname}, headers=client.ws["headers"], allow_redirects=False)
    if login.status == 302:  # the attack worked this far: play it to the end
        await hosts.follow_provider(client, login.headers["Location"], tls)
    body = {
        "providerType": "salesforce",
        "credentials": {"accessToken": "at", "refreshToken": "rt"},
        "params": {"hostname": hostname, "instance_url": f"https://{MY_DOMAIN}"},
    }
    imported = await client.post("/api/connections/import", json=body, headers=client.ws["headers"])
    await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert not attacker.saw(CLIENT_SECRET) and not attacker.saw(CLIENT_ID), attacker.received
    for answer in (login, imported):
        assert answer.status == 400 and (await answer.json())["statusCode"] == 400, (answer.status, await answer.text())
    assert await hosts.connections(client) == 0


async def test_a_stored_host_that_cannot_be_read_fails_its_refresh_cleanly(serve, attacker):
    """A connection stored before such values were refused: its refresh fails with a reason."""
    client = await serve()
    await hosts.plant_connection(client, hostname=f"{MY_DOMAIN}:{attacker.server.port}.{HOST}")
    refreshed = await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert refreshed.status == 201, await refreshed.text()
    (result,) = (await refreshed.json())["connections"]
    assert result["refreshed"] is False and "valid URL" in result["reason"]
    assert attacker.received == []


async def test_a_host_given_as_metadata_gets_no_operator_secret(serve, attacker):
    client = await serve()
    body = {
        "providerType": "salesforce",
        "credentials": {"accessToken": "at", "refreshToken": "rt"},
        "metadata": {"hostname": attacker.netloc, "instance_url": f"https://{MY_DOMAIN}"},
    }
    imported = await client.post("/api/connections/import", json=body, headers=client.ws["headers"])
    await client.post(f"/auth/salesforce/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert not attacker.saw(CLIENT_SECRET), attacker.received
    assert imported.status == 400


async def test_dropping_the_workspaces_own_app_does_not_send_the_deployments_to_its_host(serve, attacker, tls):
    client = await serve()
    saved = await client.post("/byoa/clio/credentials", json={"clientId": "own-id", "clientSecret": "own-secret"}, headers=client.ws["headers"])
    assert saved.status == 201
    connection = await hosts.connect_through(client, tls, provider="clio", hostname=attacker.netloc)
    assert connection["oauth_app"] == "byoa"
    dropped = await client.delete("/byoa/clio/credentials", headers=client.ws["headers"])
    assert dropped.status in (200, 204)
    refreshed = await client.post(f"/auth/clio/refresh/{client.ws['workspace_id']}", headers=client.ws["headers"])
    assert refreshed.status == 201 and (await refreshed.json())["connections"][0]["refreshed"] is False
    relogin = await client.get(
        "/auth/clio/login", params={"hostname": attacker.netloc, "connection_id": connection["id"]}, headers=client.ws["headers"], allow_redirects=False
    )
    deleted = await client.delete(f"/connect/v1/connections/{connection['id']}", headers=client.ws["headers"])
    assert deleted.status == 200
    assert not attacker.saw(CLIENT_SECRET) and not attacker.saw(CLIENT_ID), attacker.received
    assert relogin.status == 400
