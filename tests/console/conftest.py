"""Fixtures of the console tests (docs/console.md, "Testing a page").

- ``console_server``: the app on a real port that is also its public base URL (the console's
  redirect URI and the issuer point at it), with ``server.base``; override ``console_plugins``
  (fake providers) or ``console_settings`` in a test module to change its app.
- ``make_person(role=..., workspace_id=None, operator=False)``: a user (and a workspace, unless one is
  given) with that role: a :class:`Person` with ``email``, ``password``, ``user_id``,
  ``workspace_id``.
- ``sign_in(person)``: an ``aiohttp.ClientSession`` signed in to the console the way a browser is,
  over HTTP through the identity provider's login and consent pages (no shortcut); ``session.base``
  is the server's URL. ``csrf_of(html)`` reads a page's CSRF token.
- ``browser``: a Chromium page factory (Debian's Chromium driven by Python playwright, from PyPI:
  the tests stay in Python beside the fixtures they use, and playwright's own browser download is
  not needed). ``browser.sign_in(person)`` walks the sign-in in the browser; ``shot(page, name)``
  saves ``tests/artifacts/console-<name>.png``; ``assert_accessible(page)`` runs axe-core (npm,
  ``tests/console/node``) and fails on serious or critical violations.
- ``console_get(http, path)`` and ``console_post(http, path, form, token_from=page)`` (the form
  gets the CSRF token of ``page`` unless it has one): a page's status and text, a POST's status,
  text and ``Location``.
- ``receiver`` (answers 200) and ``failing_target`` (answers 500): local servers recording what
  they are sent; ``failing_flow(workspace_id)``: a published flow whose http step gets the 500, and
  one failed execution of it (``(flow_id, execution_id)``).
- ``api_key_headers(server, workspace_id)``: the ``x-api-key`` header of a new key of the workspace,
  for setting things up through the connect API.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import ClientSession, CookieJar

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import service as flows_service
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member, create_workspace
from patchbay.testing import Receiver
from tests.node_peers import installed
from tests.serve_process import free_port

TESTS = Path(__file__).parents[1]
ARTIFACTS = TESTS / "artifacts"
NODE = Path(__file__).with_name("node")
PASSWORD = "correct horse battery staple"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = _CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


@pytest.fixture
def console_plugins() -> list[object]:
    """Plugin objects of ``console_server``'s app (a test module overrides this fixture to add
    its fake providers)."""
    return []


@pytest.fixture
def console_settings() -> dict[str, Any]:
    """Setting overrides of ``console_server``'s app (override the fixture to change them)."""
    return {}


@pytest.fixture
async def console_server(aiohttp_server, make_app, console_plugins, console_settings):
    """The app listening on a free port that is also its public URL (``server.base``)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = await aiohttp_server(make_app(plugins=console_plugins, base_url=base, **console_settings), port=port)
    server.base = base
    return server


@attrs.define
class Person:
    email: str
    password: str
    user_id: str
    workspace_id: str
    role: str


@pytest.fixture
def make_person(console_server):
    """``await make_person(role="admin", workspace_id=None, operator=False, email=None)``: a user
    who is ``role`` in a new workspace (or in ``workspace_id``)."""
    services = console_server.app[SERVICES]
    count = 0

    async def make(role: str = "admin", workspace_id: str | None = None, *, operator: bool = False, email: str | None = None, name: str = "Acme") -> Person:
        nonlocal count
        count += 1
        async with services.db.transaction() as session:
            if workspace_id is None:
                workspace, _ = await create_workspace(session, name=f"{name} {count}", plan="enterprise")
                workspace_id = workspace.id
            user = await create_user(
                session, email=email or f"{role}{count}@example.com", password=PASSWORD, name=f"{role.title()} {count}", is_operator=operator
            )
            if role:
                await add_member(session, workspace_id=workspace_id, user_id=user.id, role=role)
        return Person(user.email, PASSWORD, user.id, workspace_id, role)

    return make


async def http_sign_in(http: ClientSession, base: str, person: Person) -> str:
    """Walk the sign-in over HTTP as a browser without JavaScript: console -> authorize -> login
    page -> consent page -> callback. Answers the URL the walk ended on."""
    async with http.get(f"{base}/console/") as response:  # -> /console/auth/login -> /authorize -> login page
        page = await response.text()
        assert response.status == 200 and "/login" in str(response.url), (response.status, str(response.url))
        interaction = re.search(r'name="interaction" value="([^"]+)"', page).group(1)
    form = {"email": person.email, "password": person.password, "csrf": csrf_of(page), "interaction": interaction}
    async with http.post(f"{base}/api/v1/oidc/login", data=form) as response:
        page = await response.text()
        assert response.status == 200, page[:2000]
        url = str(response.url)
    if "/consent" in url:
        form = {"decision": "allow", "csrf": csrf_of(page), "interaction": re.search(r'name="interaction" value="([^"]+)"', page).group(1)}
        async with http.post(f"{base}/api/v1/oidc/consent", data=form) as response:
            await response.text()
            assert response.status == 200, response.status
            url = str(response.url)
    assert "/console/" in url and "/auth/" not in url, url
    return url


@pytest.fixture
async def sign_in(console_server):
    """``await sign_in(person)``: a ``ClientSession`` signed in to the console (closed afterwards)."""
    opened: list[ClientSession] = []

    async def signed(person: Person) -> ClientSession:
        http = ClientSession(cookie_jar=CookieJar(unsafe=True))
        opened.append(http)
        http.base = console_server.base
        http.landed = await http_sign_in(http, console_server.base, person)
        return http

    yield signed
    for http in opened:
        await http.close()


async def console_get(http: ClientSession, path: str) -> tuple[int, str]:
    """A console page: its status and text."""
    async with http.get(http.base + path) as response:
        return response.status, await response.text()


async def console_post(http: ClientSession, path: str, form: dict | None = None, *, token_from: str | None = None) -> tuple[int, str, str | None]:
    """POST a console form (with the CSRF token of the page ``token_from`` unless it has one),
    not following the redirect: status, text, ``Location``."""
    form = dict(form or {})
    if "csrf" not in form and token_from is not None:
        form["csrf"] = csrf_of((await console_get(http, token_from))[1])
    async with http.post(http.base + path, data=form, allow_redirects=False) as response:
        return response.status, await response.text(), response.headers.get("Location")


async def api_key_headers(server, workspace_id: str) -> dict[str, str]:
    """The ``x-api-key`` header of a new API key of the workspace (every permission)."""
    services = server.app[SERVICES]
    async with services.db.transaction() as session:
        issued = await create_api_key(session, services.secrets, workspace_id=workspace_id, name="test")
    return {"x-api-key": issued.key}


@pytest.fixture
async def receiver():
    """A local server answering 200 to every POST, recording them."""
    server = await Receiver().start()
    yield server
    await server.close()


@pytest.fixture
async def failing_target():
    """A local server answering 500 to every POST, recording them."""
    server = await Receiver(statuses=[500]).start()
    yield server
    await server.close()


async def make_failing_flow(services, workspace_id: str, url: str) -> tuple[str, str]:
    """A published flow ("Notify CRM") whose http step POSTs to ``url``/hook, and one execution of
    it that failed there (``url`` answers 500)."""
    steps = [
        {"id": "shape", "type": "transform", "output": {"customer": "{{ trigger.customer }}"}},
        {"id": "notify", "type": "http", "method": "POST", "url": url + "/hook", "body": {"who": "{{ steps.shape.output.customer }}"}},
    ]
    flow, _ = await flows_service.create_flow(services, workspace_id=workspace_id, body={"name": "Notify CRM", "steps": steps})
    await flows_service.publish_flow(services, workspace_id=workspace_id, flow_id=flow.id)
    execution, _ = await flows_service.run_flow_now(services, workspace_id=workspace_id, flow_id=flow.id, payload={"customer": "ada"})
    assert execution.status == "failed"
    return flow.id, execution.id


@pytest.fixture
def failing_flow(console_server, failing_target):
    """``await failing_flow(workspace_id)``: see :func:`make_failing_flow`."""

    async def make(workspace_id: str) -> tuple[str, str]:
        return await make_failing_flow(console_server.app[SERVICES], workspace_id, failing_target.url)

    return make


@attrs.frozen
class RivalFlows:
    """Two managers of two workspaces, each with a flow whose execution failed; ``http`` is signed
    in as ``mine``, ``base`` is the Flows path of ``mine``'s workspace."""

    mine: Any
    theirs: Any
    flow_id: str
    execution_id: str
    own_flow: str
    http: Any
    base: str


@pytest.fixture
async def rival_flows(make_person, sign_in, failing_flow) -> RivalFlows:
    """Another workspace's flow and failed execution beside one's own (:class:`RivalFlows`)."""
    mine = await make_person("manager")
    theirs = await make_person("manager")
    flow_id, execution_id = await failing_flow(theirs.workspace_id)
    own_flow, _ = await failing_flow(mine.workspace_id)
    return RivalFlows(mine, theirs, flow_id, execution_id, own_flow, await sign_in(mine), f"/console/w/{mine.workspace_id}/flows")


# -- the browser ----------------------------------------------------------------------------------


def shot_path(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / f"console-{name}.png"


async def shot(page, name: str) -> Path:
    """A full-page screenshot kept as a test artifact (``tests/artifacts/console-<name>.png``)."""
    path = shot_path(name)
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000
    return path


async def assert_accessible(page, *, allowed: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Run axe-core on the page (WCAG 2.x A and AA rules); fail on a serious or critical
    violation, naming the rule and the elements. Answers every violation found (minor ones too)."""
    result = await page.evaluate(
        "async () => { const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))})); }"
    )
    serious = [v for v in result if v["impact"] in ("serious", "critical") and v["id"] not in allowed]
    assert serious == [], f"axe-core on {page.url}: " + "; ".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes'][:5]}" for v in serious)
    return result


@attrs.define
class Browser:
    """Chromium pages for a console walk; each ``new_page`` has its own cookies."""

    playwright_browser: Any
    base: str
    axe_script: Path
    contexts: list[Any] = attrs.field(factory=list)

    async def new_page(self, *, width: int = 1280, height: int = 800, color_scheme: str = "light"):
        context = await self.playwright_browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme)
        await context.add_init_script(path=str(self.axe_script))  # through DevTools: the pages' CSP does not apply
        context.set_default_timeout(15_000)
        self.contexts.append(context)
        return await context.new_page()

    async def sign_in(self, person: Person, page=None, *, screenshots: bool = False):
        """Sign ``person`` in through the identity provider's login (and consent) pages."""
        page = page or await self.new_page()
        await page.goto(f"{self.base}/console/")
        await page.wait_for_url(re.compile(r"/api/v1/oidc/login"))
        if screenshots:
            await shot(page, "idp-login")
        await page.get_by_label("Email").fill(person.email)
        await page.get_by_label("Password").fill(person.password)
        await page.get_by_role("button", name=re.compile("sign in", re.I)).click()
        await page.wait_for_url(re.compile(r"/api/v1/oidc/consent|/console/w/"))
        if "/consent" in page.url:
            if screenshots:
                await shot(page, "idp-consent")
            await page.get_by_role("button", name=re.compile("allow", re.I)).click()
        await page.wait_for_url(re.compile(r"/console/w/"))
        return page

    async def close(self) -> None:
        for context in self.contexts:
            await context.close()


@pytest.fixture(scope="session")
def browser_tools() -> dict[str, Path]:
    """Debian's Chromium, Python playwright and axe-core (npm, installed on first use)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("Chromium is needed for the console's browser walks")
    pytest.importorskip("playwright.async_api", reason="playwright (pip install '.[test]') drives the console's browser walks")
    installed(NODE, "Node.js and npm are needed for axe-core in the console's browser walks")
    return {"chromium": Path(executable), "axe": NODE / "node_modules" / "axe-core" / "axe.min.js"}


@pytest.fixture
async def browser(browser_tools, console_server):
    """A headless Chromium for this test, on ``console_server`` (see :class:`Browser`)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=str(browser_tools["chromium"]), args=["--no-sandbox"])
        walk = Browser(chromium, console_server.base, browser_tools["axe"])
        try:
            yield walk
        finally:
            await walk.close()
            await chromium.close()
