"""The unified CRM (4.19) over five CRMs: a local fake API answers each CRM's real response shapes
(HubSpot v3 objects, Salesforce SOQL, Pipedrive v1, Zoho CRM v2, Close v1) from one canonical
dataset; every CRM must map onto the same unified records, and cursor pagination must visit every
record exactly once."""

import re

import pytest
from aiohttp import web

from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.testing import LocalServer, add_connection

CONTACTS = [
    {"first": "Ada", "last": "Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0000", "title": "Engineer", "company": 0},
    {"first": "Grace", "last": "Hopper", "email": "grace@example.com", "phone": "+1 202 555 0100", "title": "Admiral", "company": 1},
    {"first": "Alan", "last": "Turing", "email": "alan@example.com", "phone": None, "title": None, "company": 0},
    {"first": "Katherine", "last": "Johnson", "email": "kj@example.com", "phone": "+1 757 555 0199", "title": "Mathematician", "company": 2},
    {"first": "Edsger", "last": "Dijkstra", "email": "ewd@example.com", "phone": None, "title": "Professor", "company": None},
]
COMPANIES = [
    {"name": "Analytical Engines", "domain": "analytical.example", "industry": "Technology", "employees": 12},
    {"name": "Navy Labs", "domain": "navylabs.example", "industry": "Government", "employees": 4500},
    {"name": "Langley", "domain": "langley.example", "industry": "Aerospace", "employees": 300},
]
DEALS = [
    {"name": "Engine upgrade", "amount": 12500.5, "currency": "USD", "stage": "negotiation", "close": "2025-03-31", "company": 0},
    {"name": "Compiler license", "amount": 4000, "currency": "EUR", "stage": "won", "close": "2025-01-15", "company": 1},
    {"name": "Trajectory study", "amount": 99000, "currency": "USD", "stage": "proposal", "close": "2025-06-30", "company": 2},
]
CRMS = ("hubspot", "salesforce", "pipedrive", "zoho-crm", "close")


def crm_id(crm, kind, index):
    """Each CRM's own id format."""
    return {
        "hubspot": lambda: str({"contacts": 101, "companies": 9001, "deals": 5001}[kind] + index),
        "salesforce": lambda: {"contacts": "0035g00000Ab", "companies": "0015g00000Xy", "deals": "0065g00000De"}[kind] + f"{index:03d}AAQ",
        "pipedrive": lambda: {"contacts": 1, "companies": 70, "deals": 300}[kind] + index,
        "zoho-crm": lambda: str({"contacts": 4150868000000224005, "companies": 4150868000000225001, "deals": 4150868000000226001}[kind] + index),
        "close": lambda: {"contacts": "cont_", "companies": "lead_", "deals": "oppo_"}[kind] + f"K{index}x9Qw",
    }[crm]()


# ---------------------------------------------------------------------------------------------
# Each CRM's response shapes
# ---------------------------------------------------------------------------------------------


def hubspot_object(kind, i):
    if kind == "contacts":
        c = CONTACTS[i]
        props = {
            "firstname": c["first"],
            "lastname": c["last"],
            "email": c["email"],
            "phone": c["phone"],
            "jobtitle": c["title"],
            "associatedcompanyid": crm_id("hubspot", "companies", c["company"]) if c["company"] is not None else None,
        }
    elif kind == "companies":
        c = COMPANIES[i]
        props = {"name": c["name"], "domain": c["domain"], "industry": c["industry"].upper(), "numberofemployees": str(c["employees"]), "phone": None}
    else:
        d = DEALS[i]
        props = {
            "dealname": d["name"],
            "amount": str(d["amount"]),
            "deal_currency_code": d["currency"],
            "dealstage": d["stage"],
            "closedate": d["close"] + "T00:00:00Z",
        }
    oid = crm_id("hubspot", kind, i)
    props.update({"hs_object_id": oid, "createdate": "2024-01-02T10:00:00.000Z"})
    return {"id": oid, "properties": props, "createdAt": "2024-01-02T10:00:00.000Z", "updatedAt": "2024-02-03T11:00:00.000Z", "archived": False}


def salesforce_record(kind, i):
    sobject = {"contacts": "Contact", "companies": "Account", "deals": "Opportunity"}[kind]
    rid = crm_id("salesforce", kind, i)
    base = {
        "attributes": {"type": sobject, "url": f"/services/data/v59.0/sobjects/{sobject}/{rid}"},
        "Id": rid,
        "CreatedDate": "2024-01-02T10:00:00.000+0000",
        "LastModifiedDate": "2024-02-03T11:00:00.000+0000",
    }
    if kind == "contacts":
        c = CONTACTS[i]
        account = crm_id("salesforce", "companies", c["company"]) if c["company"] is not None else None
        return {**base, "FirstName": c["first"], "LastName": c["last"], "Email": c["email"], "Phone": c["phone"], "Title": c["title"], "AccountId": account}
    if kind == "companies":
        c = COMPANIES[i]
        return {
            **base,
            "Name": c["name"],
            "Website": f"https://www.{c['domain']}/",
            "Industry": c["industry"],
            "Phone": None,
            "NumberOfEmployees": c["employees"],
        }
    d = DEALS[i]
    return {
        **base,
        "Name": d["name"],
        "Amount": d["amount"],
        "CurrencyIsoCode": d["currency"],
        "StageName": d["stage"],
        "CloseDate": d["close"],
        "AccountId": crm_id("salesforce", "companies", d["company"]),
    }


def pipedrive_item(kind, i):
    pid = crm_id("pipedrive", kind, i)
    times = {"add_time": "2024-01-02 10:00:00", "update_time": "2024-02-03 11:00:00"}
    if kind == "contacts":
        c = CONTACTS[i]
        org = (
            {"name": COMPANIES[c["company"]]["name"], "people_count": 1, "value": crm_id("pipedrive", "companies", c["company"])}
            if c["company"] is not None
            else None
        )
        return {
            "id": pid,
            "name": f"{c['first']} {c['last']}",
            "first_name": c["first"],
            "last_name": c["last"],
            "job_title": c["title"],
            "org_id": org,
            "email": [{"label": "work", "value": c["email"], "primary": True}],
            "phone": [{"label": "work", "value": c["phone"] or "", "primary": True}],
            **times,
        }
    if kind == "companies":
        c = COMPANIES[i]
        return {"id": pid, "name": c["name"], "industry": c["industry"], "people_count": c["employees"], "address": None, **times}
    d = DEALS[i]
    return {
        "id": pid,
        "title": d["name"],
        "value": d["amount"],
        "currency": d["currency"],
        "stage_id": d["stage"],
        "status": "open",
        "expected_close_date": d["close"],
        "org_id": {"name": COMPANIES[d["company"]]["name"], "value": crm_id("pipedrive", "companies", d["company"])},
        **times,
    }


def zoho_item(kind, i):
    base = {"id": crm_id("zoho-crm", kind, i), "Created_Time": "2024-01-02T15:30:00+05:30", "Modified_Time": "2024-02-03T16:30:00+05:30", "$approved": True}
    if kind == "contacts":
        c = CONTACTS[i]
        account = {"name": COMPANIES[c["company"]]["name"], "id": crm_id("zoho-crm", "companies", c["company"])} if c["company"] is not None else None
        return {
            **base,
            "First_Name": c["first"],
            "Last_Name": c["last"],
            "Email": c["email"],
            "Phone": c["phone"],
            "Title": c["title"],
            "Account_Name": account,
        }
    if kind == "companies":
        c = COMPANIES[i]
        return {**base, "Account_Name": c["name"], "Website": f"http://{c['domain']}", "Industry": c["industry"], "Phone": None, "Employees": c["employees"]}
    d = DEALS[i]
    return {
        **base,
        "Deal_Name": d["name"],
        "Amount": d["amount"],
        "Currency": d["currency"],
        "Stage": d["stage"],
        "Closing_Date": d["close"],
        "Account_Name": {"name": COMPANIES[d["company"]]["name"], "id": crm_id("zoho-crm", "companies", d["company"])},
    }


def close_item(kind, i):
    base = {
        "id": crm_id("close", kind, i),
        "date_created": "2024-01-02T10:00:00.000000+00:00",
        "date_updated": "2024-02-03T11:00:00.000000+00:00",
        "organization_id": "orga_abc",
    }
    if kind == "contacts":
        c = CONTACTS[i]
        lead = crm_id("close", "companies", c["company"]) if c["company"] is not None else None
        return {
            **base,
            "name": f"{c['first']} {c['last']}",
            "title": c["title"],
            "lead_id": lead,
            "emails": [{"type": "office", "email": c["email"]}],
            "phones": [{"type": "office", "phone": c["phone"]}] if c["phone"] else [],
        }
    if kind == "companies":
        c = COMPANIES[i]
        return {**base, "display_name": c["name"], "name": c["name"], "url": f"https://{c['domain']}", "status_label": "Potential", "contacts": []}
    d = DEALS[i]
    return {
        **base,
        "note": d["name"],
        "value": round(d["amount"] * 100),
        "value_currency": d["currency"],
        "status_label": d["stage"],
        "date_won": d["close"],
        "lead_id": crm_id("close", "companies", d["company"]),
        "lead_name": COMPANIES[d["company"]]["name"],
        "value_period": "one_time",
    }


SIZES = {"contacts": len(CONTACTS), "companies": len(COMPANIES), "deals": len(DEALS)}


class FakeCrms(LocalServer):
    """One local server for the five CRMs, each under its own path prefix."""

    def __init__(self):
        self.calls = []
        app = web.Application()
        app.router.add_get("/hubspot/crm/v3/objects/{kind}", self.hubspot_list)
        app.router.add_get("/hubspot/crm/v3/objects/{kind}/{id}", self.hubspot_get)
        app.router.add_get("/salesforce/services/data/v59.0/query", self.salesforce_query)
        app.router.add_get("/salesforce/services/data/v59.0/sobjects/{sobject}/{id}", self.salesforce_get)
        app.router.add_get("/pipedrive/v1/{kind}", self.pipedrive_list)
        app.router.add_get("/pipedrive/v1/{kind}/{id}", self.pipedrive_get)
        app.router.add_get("/zoho/crm/v2/{module}", self.zoho_list)
        app.router.add_get("/zoho/crm/v2/{module}/{id}", self.zoho_get)
        app.router.add_get("/close/v1/{kind}/", self.close_list)
        app.router.add_get("/close/v1/{kind}/{id}/", self.close_get)
        super().__init__(app)

    def _find(self, crm, kind, item_id, render):
        for i in range(SIZES[kind]):
            if str(crm_id(crm, kind, i)) == item_id:
                return render(kind, i)
        return None

    async def hubspot_list(self, request):
        kind = request.match_info["kind"]
        self.calls.append(("hubspot", request.headers.get("Authorization"), dict(request.query)))
        start = int(request.query.get("after", "0"))
        limit = int(request.query["limit"])
        results = [hubspot_object(kind, i) for i in range(start, min(start + limit, SIZES[kind]))]
        paging = {"next": {"after": str(start + limit), "link": "https://api.hubapi.com/..."}} if start + limit < SIZES[kind] else None
        return web.json_response({"results": results, **({"paging": paging} if paging else {})})

    async def hubspot_get(self, request):
        item = self._find("hubspot", request.match_info["kind"], request.match_info["id"], hubspot_object)
        return web.json_response(item) if item else web.json_response({"status": "error", "category": "OBJECT_NOT_FOUND"}, status=404)

    async def salesforce_query(self, request):
        soql = request.query["q"]
        sobject = re.search(r"FROM (\w+)", soql).group(1)
        kind = {"Contact": "contacts", "Account": "companies", "Opportunity": "deals"}[sobject]
        after = re.search(r"WHERE Id > '(\w+)'", soql)
        limit = int(re.search(r"LIMIT (\d+)", soql).group(1))
        records = sorted((salesforce_record(kind, i) for i in range(SIZES[kind])), key=lambda r: r["Id"])
        if after:
            records = [r for r in records if r["Id"] > after.group(1)]
        records = records[:limit]
        return web.json_response({"totalSize": len(records), "done": True, "records": records})

    async def salesforce_get(self, request):
        kind = {"Contact": "contacts", "Account": "companies", "Opportunity": "deals"}[request.match_info["sobject"]]
        item = self._find("salesforce", kind, request.match_info["id"], salesforce_record)
        return (
            web.json_response(item) if item else web.json_response([{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}], status=404)
        )

    async def pipedrive_list(self, request):
        kind = {"persons": "contacts", "organizations": "companies", "deals": "deals"}[request.match_info["kind"]]
        start, limit = int(request.query.get("start", "0")), int(request.query["limit"])
        data = [pipedrive_item(kind, i) for i in range(start, min(start + limit, SIZES[kind]))]
        more = start + limit < SIZES[kind]
        pagination = {"start": start, "limit": limit, "more_items_in_collection": more, **({"next_start": start + limit} if more else {})}
        return web.json_response({"success": True, "data": data or None, "additional_data": {"pagination": pagination}})

    async def pipedrive_get(self, request):
        kind = {"persons": "contacts", "organizations": "companies", "deals": "deals"}[request.match_info["kind"]]
        item = self._find("pipedrive", kind, request.match_info["id"], pipedrive_item)
        return web.json_response({"success": True, "data": item}) if item else web.json_response({"success": False, "error": "Person not found"}, status=404)

    async def zoho_list(self, request):
        kind = {"Contacts": "contacts", "Accounts": "companies", "Deals": "deals"}[request.match_info["module"]]
        page, per_page = int(request.query.get("page", "1")), int(request.query["per_page"])
        start = (page - 1) * per_page
        data = [zoho_item(kind, i) for i in range(start, min(start + per_page, SIZES[kind]))]
        if not data:
            return web.Response(status=204)
        return web.json_response(
            {"data": data, "info": {"per_page": per_page, "count": len(data), "page": page, "more_records": start + per_page < SIZES[kind]}}
        )

    async def zoho_get(self, request):
        kind = {"Contacts": "contacts", "Accounts": "companies", "Deals": "deals"}[request.match_info["module"]]
        item = self._find("zoho-crm", kind, request.match_info["id"], zoho_item)
        return web.json_response({"data": [item]}) if item else web.Response(status=204)

    async def close_list(self, request):
        kind = {"contact": "contacts", "lead": "companies", "opportunity": "deals"}[request.match_info["kind"]]
        skip, limit = int(request.query.get("_skip", "0")), int(request.query["_limit"])
        data = [close_item(kind, i) for i in range(skip, min(skip + limit, SIZES[kind]))]
        return web.json_response({"has_more": skip + limit < SIZES[kind], "total_results": SIZES[kind], "data": data})

    async def close_get(self, request):
        kind = {"contact": "contacts", "lead": "companies", "opportunity": "deals"}[request.match_info["kind"]]
        item = self._find("close", kind, request.match_info["id"], close_item)
        return web.json_response(item) if item else web.json_response({"error": "Empty query: Contact matching query does not exist."}, status=404)


PREFIXES = {"hubspot": "hubspot", "salesforce": "salesforce", "pipedrive": "pipedrive", "zoho-crm": "zoho", "close": "close"}


@pytest.fixture
async def fake():
    server = await FakeCrms().start()
    yield server
    await server.close()


async def crm_client(aiohttp_client, make_app, fake, url):
    overrides = {name: {"api_base_url": f"{fake.url}/{prefix}"} for name, prefix in PREFIXES.items()}
    app = make_app(database_url=url, providers=overrides)
    client = await aiohttp_client(app)
    client.ws = await create_workspace_with_key(app, plan="enterprise")
    client.connections = {name: await add_connection(app, client.ws["workspace_id"], name, credentials={"access_token": f"tok-{name}"}) for name in CRMS}
    return client


@pytest.fixture
async def crm(aiohttp_client, make_app, fake, database_url):
    """On both databases."""
    return await crm_client(aiohttp_client, make_app, fake, database_url)


@pytest.fixture
async def crm_sqlite(aiohttp_client, make_app, fake, sqlite_url):
    """The mapping itself does not touch the database: SQLite is enough."""
    return await crm_client(aiohttp_client, make_app, fake, sqlite_url)


def expected(crm, kind, i):
    """The unified record every CRM must produce for canonical item ``i`` (ids in the CRM's format)."""
    if kind == "contacts":
        c = CONTACTS[i]
        company = str(crm_id(crm, "companies", c["company"])) if c["company"] is not None else None
        return {
            "id": str(crm_id(crm, kind, i)),
            "firstName": c["first"],
            "lastName": c["last"],
            "email": c["email"],
            "phone": c["phone"],
            "title": c["title"],
            "companyId": company,
        }
    if kind == "companies":
        c = COMPANIES[i]
        industry = {"hubspot": c["industry"].upper(), "close": None}.get(crm, c["industry"])
        domain = None if crm == "pipedrive" else c["domain"]  # Pipedrive organizations have no website field
        employees = None if crm == "close" else c["employees"]  # Close leads carry no headcount
        return {"id": str(crm_id(crm, kind, i)), "name": c["name"], "domain": domain, "industry": industry, "employees": employees}
    d = DEALS[i]
    company = None if crm == "hubspot" else str(crm_id(crm, "companies", d["company"]))  # HubSpot deals link companies by association only
    return {
        "id": str(crm_id(crm, kind, i)),
        "name": d["name"],
        "amount": d["amount"],
        "currency": d["currency"],
        "stage": d["stage"],
        "closeDate": d["close"],
        "companyId": company,
    }


async def read_all(api, crm, kind, limit, path="/api/unified/crm", headers=None):
    pages, cursor = [], None
    while True:
        params = {"connectionId": api.connections[crm], "limit": str(limit), **({"cursor": cursor} if cursor else {})}
        response = await api.get(f"{path}/{kind}", params=params, headers=headers or api.ws["headers"])
        assert response.status == 200, await response.text()
        body = await response.json()
        pages.append(body["data"])
        cursor = body["nextCursor"]
        if cursor is None:
            return pages
        assert len(pages) < 10


@pytest.mark.parametrize("crm_name", CRMS)
async def test_each_crm_maps_onto_the_unified_model_across_pages(crm_sqlite, crm_name):
    for kind in ("contacts", "companies", "deals"):
        pages = await read_all(crm_sqlite, crm_name, kind, limit=2)
        items = [item for page in pages for item in page]
        assert all(len(page) <= 2 for page in pages)
        ids = [item["id"] for item in items]
        assert len(ids) == len(set(ids)) == SIZES[kind], (kind, ids)  # no duplicates, no gaps
        by_id = {item["id"]: item for item in items}
        for i in range(SIZES[kind]):
            want = expected(crm_name, kind, i)
            got = by_id[want["id"]]
            assert {key: got[key] for key in want} == want, (kind, i)
            assert got["provider"] == crm_name and got["createdAt"] and got["updatedAt"]


async def test_crm_get_one_and_not_found(crm_sqlite):
    crm = crm_sqlite
    for crm_name in CRMS:
        contact_id = str(crm_id(crm_name, "contacts", 1))
        response = await crm.get(f"/api/unified/crm/contacts/{contact_id}", params={"connectionId": crm.connections[crm_name]}, headers=crm.ws["headers"])
        assert response.status == 200, (crm_name, await response.text())
        body = await response.json()
        assert body["email"] == "grace@example.com" and body["id"] == contact_id and body["provider"] == crm_name
        deal_id = str(crm_id(crm_name, "deals", 2))
        body = await (await crm.get(f"/api/unified/crm/deals/{deal_id}", params={"connectionId": crm.connections[crm_name]}, headers=crm.ws["headers"])).json()
        assert body["name"] == "Trajectory study"
        missing = await crm.get("/api/unified/crm/contacts/0035g00000Zz999AAQ", params={"connectionId": crm.connections[crm_name]}, headers=crm.ws["headers"])
        assert missing.status == 404, crm_name


async def test_providers_list_auth_variants_and_bad_cursors(crm, fake):
    listed = await (await crm.get("/api/unified/crm/providers", headers=crm.ws["headers"])).json()
    assert {p["name"] for p in listed} >= set(CRMS)
    assert next(p for p in listed if p["name"] == "zoho-crm")["resources"] == ["contacts", "companies", "deals"]
    # the user variant takes an access token of our identity provider, not an API key
    token = await sign_access_token(crm.server.app, {"sub": "user-1", "organization_id": crm.ws["workspace_id"], "permissions": ["connections.view"]})
    pages = await read_all(crm, "hubspot", "contacts", limit=3, path="/api/unified/user/crm", headers={"Authorization": f"Bearer {token}"})
    assert [len(page) for page in pages] == [3, 2]
    response = await crm.get("/api/unified/user/crm/contacts", params={"connectionId": crm.connections["hubspot"]}, headers=crm.ws["headers"])
    assert response.status == 401
    # the credential went to the CRM, injected by the connection client
    assert ("hubspot", "Bearer tok-hubspot") in {(c[0], c[1]) for c in fake.calls}
    # organizationId must be the caller's own workspace
    response = await crm.get(
        "/api/unified/crm/contacts", params={"connectionId": crm.connections["hubspot"], "organizationId": "someone-else"}, headers=crm.ws["headers"]
    )
    assert response.status == 404
    # a cursor of another resource or CRM is refused, not sent on
    first = await (
        await crm.get("/api/unified/crm/contacts", params={"connectionId": crm.connections["hubspot"], "limit": "1"}, headers=crm.ws["headers"])
    ).json()
    for kind, crm_name in (("deals", "hubspot"), ("contacts", "pipedrive")):
        response = await crm.get(
            f"/api/unified/crm/{kind}", params={"connectionId": crm.connections[crm_name], "cursor": first["nextCursor"]}, headers=crm.ws["headers"]
        )
        assert response.status == 400
    assert (await crm.get("/api/unified/crm/contacts", params={"cursor": "%%%"}, headers=crm.ws["headers"])).status == 400
    assert (await crm.get("/api/unified/crm/tickets", headers=crm.ws["headers"])).status in (404, 405)


async def test_connections_of_other_workspaces_and_non_crms_are_refused(crm):
    other = await create_workspace_with_key(crm.server.app, name="Other")
    response = await crm.get("/api/unified/crm/contacts", params={"connectionId": crm.connections["hubspot"]}, headers=other["headers"])
    assert response.status == 404
    assert (await crm.get("/api/unified/crm/contacts", headers=other["headers"])).status == 404  # no CRM connection at all
    stripe = await add_connection(crm.server.app, crm.ws["workspace_id"], "stripe", credentials={"api_key": "sk"})
    response = await crm.get("/api/unified/crm/contacts", params={"connectionId": stripe}, headers=crm.ws["headers"])
    assert response.status == 400 and "no unified CRM support" in (await response.json())["message"]
