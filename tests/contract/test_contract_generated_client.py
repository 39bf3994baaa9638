"""A Python client generated from /openapi.json by openapi-python-client drives a user's first
hour against the live API: connect an API-key provider, proxy a call to it (a local fake), import
CSV rows into a table and read them back, test a flow that looks a row up. The typed models the
client returns come from the document's response schemas, so this fails when the document and the
answers drift apart, or when an operation loses its body or answer schema."""

from __future__ import annotations

import asyncio
import importlib
import shutil
import sys
import uuid
from pathlib import Path

import aiohttp
import pytest

pytestmark = pytest.mark.slow  # generates and imports a client with openapi-python-client

GENERATE_SECONDS = 120


async def _generate(live_api, folder: Path) -> str:
    """Generate the client package into ``folder``; answers its import name. The ruff post-hooks
    are off: the test needs importable code, not formatted code, and ruff may be absent."""
    executable = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))
    assert executable, "openapi-python-client is a test dependency (pip install -e '.[test]')"
    async with aiohttp.ClientSession() as http, http.get(f"{live_api.base_url}/openapi.json") as response:
        (folder / "openapi.json").write_bytes(await response.read())
    package = f"patchbay_client_{uuid.uuid4().hex[:8]}"
    (folder / "config.yaml").write_text(f"project_name_override: {package}\npackage_name_override: {package}\npost_hooks: []\n")
    process = await asyncio.create_subprocess_exec(
        executable,
        "generate",
        "--path",
        "openapi.json",
        "--config",
        "config.yaml",
        "--meta",
        "none",
        "--output-path",
        package,
        cwd=folder,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), GENERATE_SECONDS)
    assert process.returncode == 0, output.decode(errors="replace")
    return package


@pytest.fixture
async def generated(live_api, tmp_path):
    """The generated package, importable for the test's duration."""
    package = await _generate(live_api, tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda module="": importlib.import_module(f"{package}.{module}" if module else package)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
            del sys.modules[name]


@pytest.mark.timeout(GENERATE_SECONDS + 120)
@pytest.mark.both_databases
async def test_generated_client_drives_the_first_hour(live_api, generated):
    models = generated("models")
    api = live_api
    client = generated().AuthenticatedClient(base_url=api.base_url, token=api.workspace["api_key"], prefix="", auth_header_name="x-api-key")
    api.fake.routes[("GET", "/contacts")] = (200, {"results": [{"email": "ada@example.com"}]})

    # the provider's connect facts, then connecting it with an API key
    detail = await generated("api.providers.get_get_provider_route").asyncio(api.provider, client=client)
    assert isinstance(detail, models.ProviderDetail) and detail.connect.method == "credentials"
    assert [field.name for field in detail.connect.credentials if field.required] == ["apiKey"]
    body = models.ConnectDto(credentials=models.ApiKeyCredentials(api_key="live-key-1"))
    connected = await generated("api.providers.post_connect").asyncio(api.provider, client=client, body=body)
    assert isinstance(connected, models.Connected) and connected.success
    page = await generated("api.connections.get_list_connections").asyncio(client=client)
    assert [c.connection_id for c in page.data] == [connected.connection_id] and page.total == 1

    # a call through the proxy reaches the provider's API with the stored key
    proxied = await generated("api.proxy.get_proxy_passthrough").asyncio_detailed(api.provider, "contacts", client=client)
    assert proxied.status_code == 200 and b"ada@example.com" in proxied.content
    assert api.fake.requests[-1].headers["Authorization"] == "Bearer live-key-1"

    # a table, CSV imported into it, the rows read back
    columns = [models.ColumnDef(name="email", type_=models.ColumnDefType.TEXT), models.ColumnDef(name="age", type_=models.ColumnDefType.NUMBER)]
    table = await generated("api.tables.post_create_table").asyncio(client=client, body=models.CreateTableDto(name="People", columns=columns))
    assert isinstance(table, models.TableOut) and table.slug == "people"
    csv = "email,age\nada@example.com,36\ngrace@example.com,45\n"
    report = await generated("api.tables.post_import_rows").asyncio("people", client=client, body=models.CsvDto(csv=csv))
    assert isinstance(report, models.ImportReport) and (report.created, report.rejected) == (2, 0)
    rows = await generated("api.tables.get_list_rows").asyncio("people", client=client, search="grace")
    assert rows.total == 1 and rows.data[0].data["age"] == 45

    # a flow that looks the row up (a step is the model of its type, from the document's union),
    # tested with a payload: the execution and its steps come back as typed models
    step = models.TableLookupStep.from_dict({"id": "find", "type": "table.lookup", "table": "people", "column": "email", "value": "{{ trigger.email }}"})
    flow = await generated("api.flows.post_create_flow").asyncio(client=client, body=models.CreateFlowDto(name="Find", steps=[step]))
    assert isinstance(flow, models.CheckedFlow) and flow.status == models.CheckedFlowStatus.DRAFT and flow.problems == []
    payload = models.TriggerPayload.from_dict({"email": "grace@example.com"})
    execution = await generated("api.flows.post_test_flow").asyncio(flow.id, client=client, body=payload)
    assert isinstance(execution, models.ExecutionWithSteps) and execution.status == models.ExecutionWithStepsStatus.COMPLETED, execution
    assert [step.output["data"]["age"] for step in execution.steps] == [45]
