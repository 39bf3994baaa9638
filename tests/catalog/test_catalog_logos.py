"""Provider logos: the brand icons vendored from simple-icons (``providers/catalog/logos``) are
served by the logo route for the providers that have one, the monogram for the others, and the
Connect UI and the console's connection list show the icon where there is one and the monogram
otherwise. The files ship in the distribution (setup.py's package data) and stay small."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key
from patchbay.providers import catalog
from patchbay.testing import add_connection
from tests.console.conftest import console_plugins, console_server, console_settings, make_person, sign_in  # noqa: F401 (fixtures)

LOGOS = Path(catalog.__file__).parent / "logos"
ROOT = Path(__file__).resolve().parents[2]


async def test_a_provider_with_an_icon_serves_it_and_one_without_its_monogram(client):
    icon = await client.get("/connect/v1/providers/stripe-api-key/logo.svg")  # public: an <img> sends no credentials
    assert icon.status == 200 and icon.content_type == "image/svg+xml"
    svg = await icon.text()
    assert svg == (LOGOS / "stripe-api-key.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and 'fill="#635BFF"' in svg and "<title>Stripe (API Key)</title>" in svg and "<text" not in svg

    monogram = await client.get("/connect/v1/providers/salesforce/logo.svg")
    assert monogram.status == 200 and not (LOGOS / "salesforce.svg").exists()
    assert ">S</text>" in await monogram.text()


async def test_the_connect_ui_shows_the_icon_or_the_monogram(client):
    ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    body = {"endUser": {"id": "user-9"}, "allowedProviders": ["stripe-api-key", "salesforce", "twilio"]}
    token = (await (await client.post("/connect/v1/connect-sessions", json=body, headers=ws["headers"])).json())["token"]
    await client.get(f"/connect/ui?session={token}")
    page = await (await client.get("/connect/ui/providers")).text()
    assert '<img class="logo brand" src="/connect/v1/providers/stripe-api-key/logo.svg"' in page
    assert re.search(r'<span class="logo" aria-hidden="true">T</span><span>Twilio</span>', page), "no icon ships for Twilio: its monogram"
    step = await (await client.get("/connect/ui/providers/stripe-api-key")).text()
    assert '<img class="logo brand" src="/connect/v1/providers/stripe-api-key/logo.svg" alt="">' in step
    step = await (await client.get("/connect/ui/providers/twilio")).text()
    assert '<span class="logo" aria-hidden="true">T</span>' in step


async def test_the_console_lists_connections_with_the_icon_or_the_monogram(console_server, make_person, sign_in):  # noqa: F811
    person = await make_person("viewer")
    await add_connection(console_server.app, person.workspace_id, "stripe-api-key", credentials={"username": "sk_test_x", "password": ""})
    await add_connection(console_server.app, person.workspace_id, "twilio", credentials={"username": "AC1", "password": "t"})
    http = await sign_in(person)
    async with http.get(f"{console_server.base}/console/w/{person.workspace_id}/connections") as response:
        page = await response.text()
    assert response.status == 200
    assert '<img class="logo brand" src="/connect/v1/providers/stripe-api-key/logo.svg" alt="">' in page
    assert '<span class="logo" aria-hidden="true">T</span>' in page


def test_every_icon_belongs_to_a_provider_and_stays_small(make_app):
    providers = make_app()[SERVICES].registry.providers
    files = sorted(LOGOS.glob("*.svg"))
    assert len(files) > 100
    for path in files:
        assert path.stem in providers, f"{path.name}: no provider of that name"
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<svg") and "<script" not in text.lower() and "href" not in text, path.name
    assert sum(path.stat().st_size for path in files) < 400_000
    assert "CC0-1.0" in (LOGOS / "README.md").read_text(encoding="utf-8")


def test_the_icons_ship_as_package_data():
    spec = importlib.util.spec_from_file_location("patchbay_setup_data", ROOT / "setup.py")
    source = (ROOT / "setup.py").read_text(encoding="utf-8").split("package_dir = ")[0]  # data_files_of, without running setup()
    namespace: dict = {"__name__": spec.name}
    exec(compile(source, str(ROOT / "setup.py"), "exec"), namespace)
    shipped = namespace["data_files_of"](ROOT / "providers" / "catalog")
    assert {f"logos/{path.name}" for path in LOGOS.glob("*.svg")} <= set(shipped) and "logos/README.md" in shipped
