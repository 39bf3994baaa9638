"""Salesforce REST API: SOQL over Contact, Account and Opportunity, paged by Id (keyset: ``WHERE Id >
:cursor ORDER BY Id``), which stays correct however long a client takes between pages."""

from __future__ import annotations

import re
from typing import Any

from patchbay.providers._shared.crm import RESOURCES, CrmError, domain_of, ok_json

NAME = "salesforce"
VERSION = "v59.0"
SOBJECTS = {"contacts": "Contact", "companies": "Account", "deals": "Opportunity"}
FIELDS = {
    "contacts": "Id, FirstName, LastName, Email, Phone, Title, AccountId, CreatedDate, LastModifiedDate",
    "companies": "Id, Name, Website, Industry, Phone, NumberOfEmployees, CreatedDate, LastModifiedDate",
    "deals": "Id, Name, Amount, StageName, CloseDate, AccountId, CreatedDate, LastModifiedDate",
}
_ID = re.compile(r"^[A-Za-z0-9]{15,18}$")


def _map(resource: str, r: dict[str, Any]) -> dict[str, Any]:
    common = {"id": r.get("Id"), "createdAt": r.get("CreatedDate"), "updatedAt": r.get("LastModifiedDate")}
    if resource == "contacts":
        return {
            **common,
            "firstName": r.get("FirstName"),
            "lastName": r.get("LastName"),
            "email": r.get("Email"),
            "phone": r.get("Phone"),
            "title": r.get("Title"),
            "companyId": r.get("AccountId"),
        }
    if resource == "companies":
        return {
            **common,
            "name": r.get("Name"),
            "domain": domain_of(r.get("Website")),
            "industry": r.get("Industry"),
            "phone": r.get("Phone"),
            "employees": r.get("NumberOfEmployees"),
        }
    return {
        **common,
        "name": r.get("Name"),
        "amount": r.get("Amount"),
        "currency": r.get("CurrencyIsoCode"),
        "stage": r.get("StageName"),
        "closeDate": r.get("CloseDate"),
        "companyId": r.get("AccountId"),
    }


class SalesforceMapper:
    resources = RESOURCES

    async def list(self, client, resource: str, limit: int, cursor: Any):
        where = ""
        if cursor:
            if not isinstance(cursor, str) or not _ID.match(cursor):
                raise CrmError("invalid Salesforce cursor")
            where = f" WHERE Id > '{cursor}'"
        soql = f"SELECT {FIELDS[resource]} FROM {SOBJECTS[resource]}{where} ORDER BY Id LIMIT {int(limit)}"
        body = ok_json(await client.request("GET", f"/services/data/{VERSION}/query", params={"q": soql}), NAME)
        records = body.get("records", [])
        items = [_map(resource, r) for r in records]
        return items, (records[-1]["Id"] if len(records) == limit and records else None)

    async def get(self, client, resource: str, item_id: str):
        if not _ID.match(item_id):
            return None
        response = await client.request("GET", f"/services/data/{VERSION}/sobjects/{SOBJECTS[resource]}/{item_id}")
        if response.status == 404:
            return None
        return _map(resource, ok_json(response, NAME))
