"""One casing: the connect API's fields are camelCase. The snake_case ones that remain are the
documented list of docs/api-contract.md; a new snake_case field fails here (protocol documents of
OAuth and OpenID Connect keep their protocol's names)."""

from pathlib import Path

#: protocol endpoints whose field names a standard fixes
PROTOCOL_PREFIXES = ("/api/v1/oidc/", "/.well-known/")
#: the snake_case fields clients already depend on (docs/api-contract.md, "Field names")
KNOWN = {
    ("CheckedFlow", "published_at"),
    ("FlowOut", "published_at"),
    ("FlowVersionOut", "published_at"),
    ("FlowVersionWithSteps", "published_at"),
    ("Published", "published_at"),
    ("RowDto", "external_key"),
    ("RowOut", "external_key"),
    ("UpsertRowDto", "external_key"),
    ("UpsertedRow", "external_key"),
    ("DeletionRequested", "confirmation_code"),
    ("DeauthorizationCallback", "signed_request"),
}


def _refs(node, out: set[str]) -> None:
    if isinstance(node, dict):
        if "$ref" in node:
            out.add(node["$ref"].rsplit("/", 1)[1])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


async def test_no_new_snake_case_field_outside_the_protocols(client):
    document = await (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    used: set[str] = set()
    for path, operations in document["paths"].items():
        if not path.startswith(PROTOCOL_PREFIXES):
            _refs(operations, used)
    pending = list(used)
    while pending:  # schemas reached through other schemas
        found: set[str] = set()
        _refs(schemas.get(pending.pop(), {}), found)
        pending.extend(found - used)
        used |= found
    snake = {(name, field) for name in used for field in schemas.get(name, {}).get("properties", {}) if "_" in field}
    snake -= {(name, field) for name, field in snake if name in ("OAuthError", "OrganizationMembershipClaim")}  # protocol shapes reused
    assert snake == KNOWN
    documented = (Path(__file__).parents[2] / "docs" / "api-contract.md").read_text()
    assert all(f"`{field}`" in documented for _, field in KNOWN)
