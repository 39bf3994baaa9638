"""A third-party pack adds unified CRM support through ``register_crm_mappers``: its CRM is listed,
its records come back in the unified shape (unknown keys dropped, numbers normalised), its paging
token round-trips through the opaque cursor, and its errors answer 502 naming it."""

from patchbay import Provider, hookimpl
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection

PEOPLE = [{"id": 1, "firstName": "Ada", "email": "ada@example.com", "internal": "dropped"}, {"id": 2, "firstName": "Alan"}, {"id": 3, "firstName": "Grace"}]


class TinyCrm:
    resources = ("contacts", "deals")

    def __init__(self):
        self.cursors = []

    async def list(self, client, resource, limit, cursor):
        self.cursors.append(cursor)
        if resource == "deals":
            raise RuntimeError("tinycrm answered 500: boom")
        start = (cursor or {}).get("offset", 0)
        page = PEOPLE[start : start + limit]
        return page, ({"offset": start + limit} if start + limit < len(PEOPLE) else None)

    async def get(self, client, resource, item_id):
        return next((p for p in PEOPLE if str(p["id"]) == item_id), None)


class TinyPack:
    def __init__(self):
        self.mapper = TinyCrm()

    @hookimpl
    def register_providers(self):
        return [Provider(name="tinycrm", display_name="Tiny CRM", category="crm", auth_mode="api_key", api_base_url="https://tiny.invalid")]

    @hookimpl
    def register_crm_mappers(self, register):
        register("tinycrm", self.mapper)


async def test_a_pack_mapper_serves_the_unified_routes(aiohttp_client, make_app):
    pack = TinyPack()
    app = make_app(plugins=[pack])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    connection = await add_connection(app, ws["workspace_id"], "tinycrm", credentials={"api_key": "k"})
    listed = await (await client.get("/api/unified/crm/providers", headers=ws["headers"])).json()
    assert {"name": "tinycrm", "displayName": "Tiny CRM", "category": "crm", "resources": ["contacts", "deals"]} in listed
    first = await (await client.get("/api/unified/crm/contacts", params={"limit": "2"}, headers=ws["headers"])).json()  # default connection
    assert first["data"][0] == {
        "id": "1",
        "firstName": "Ada",
        "lastName": None,
        "email": "ada@example.com",
        "phone": None,
        "title": None,
        "companyId": None,
        "createdAt": None,
        "updatedAt": None,
        "provider": "tinycrm",
    }
    second = await (
        await client.get("/api/unified/crm/contacts", params={"limit": "2", "cursor": first["nextCursor"], "connectionId": connection}, headers=ws["headers"])
    ).json()
    assert [c["id"] for c in second["data"]] == ["3"] and second["nextCursor"] is None
    assert pack.mapper.cursors == [None, {"offset": 2}]  # the provider's own token came back intact
    assert (await (await client.get("/api/unified/crm/contacts/2", headers=ws["headers"])).json())["firstName"] == "Alan"
    assert (await client.get("/api/unified/crm/contacts/9", headers=ws["headers"])).status == 404
    failed = await client.get("/api/unified/crm/deals", headers=ws["headers"])
    assert failed.status == 502 and "tinycrm" in (await failed.json())["message"]
    unsupported = await client.get("/api/unified/crm/companies", headers=ws["headers"])
    assert unsupported.status == 400


class OddCrm(TinyCrm):
    """A mapper passing a CRM's values through as they come: a number, an object, a list."""

    async def get(self, client, resource, item_id):
        return {"id": 4, "firstName": "Kat", "phone": 7575550199, "title": {"label": "Mathematician"}, "email": ["kj@example.com"], "companyId": 70}


async def test_a_mapper_value_of_another_kind_keeps_the_unified_shape(aiohttp_client, make_app):
    pack = TinyPack()
    pack.mapper = OddCrm()
    app = make_app(plugins=[pack])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "tinycrm", credentials={"api_key": "k"})
    answer = await client.get("/api/unified/crm/contacts/4", headers=ws["headers"])
    assert answer.status == 200, await answer.text()
    assert await answer.json() == {
        "id": "4",
        "firstName": "Kat",
        "lastName": None,
        "email": None,
        "phone": "7575550199",
        "title": None,
        "companyId": "70",
        "createdAt": None,
        "updatedAt": None,
        "provider": "tinycrm",
    }
