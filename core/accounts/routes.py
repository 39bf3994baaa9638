"""Accounts (spec 4.1): CRUD of the tenant record through the unprefixed ``/accounts`` routes. An
account is a workspace seen from outside (contract section 4); its id is the tokens'
``organization_id``.

Who may call what (docs/billing.md): the operator's admin API key (``[admin] api_key``) may do
everything; a workspace's own credential may read its record and, with ``workspace.admin``, rename
it. The plan is changed only by the operator here (or by the payment provider's webhook, or the CLI).
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.accounts import service as accounts
from patchbay.core.accounts.api_models import (
    Account,
    AccountDeleted,
    AccountDetail,
    AccountPage,
    CreateAccountDto,
    CreatedAccount,
    UpdateAccountDto,
    account_json,
)
from patchbay.core.accounts.auth import is_operator
from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Forbidden, Invalid, NotFound, Unauthenticated
from patchbay.core.http.bodies import page_params, read_object, structure
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import Principal, authenticate, refused
from patchbay.core.security.refusals import CONNECT_API_CREDENTIALS
from patchbay.core.workspaces.models import PLANS

routes = web.RouteTableDef()

EDITABLE = {"name": "name", "plan": "plan", "externalId": "external_id", "settings": "settings"}
OWNER_EDITABLE = {"name", "settings"}
#: the operator's credential, and the setting that holds it
OPERATOR_CREDENTIALS = "the operator's admin key (`[admin] api_key`, PATCHBAY_ADMIN_API_KEY) as `x-api-key: <key>` or `Authorization: Bearer <key>`"


async def _caller(request: web.Request, account_id: str) -> Principal | None:
    """None for the operator; the principal of the account's own credential; else 401 / 404."""
    if is_operator(request):
        return None
    principal = await authenticate(request)
    if principal is None:
        raise await refused(request, expected=f"the operator's admin key, or {CONNECT_API_CREDENTIALS} of this account")
    if principal.workspace_id is None:
        raise Unauthenticated(f"Unauthorized: the credential names no workspace; send {CONNECT_API_CREDENTIALS} of this account")
    if principal.workspace_id != account_id:
        raise NotFound("Account not found")
    return principal


def _operator_only(request: web.Request) -> None:
    if is_operator(request):
        return
    if request.headers.get("x-api-key") or request.headers.get("Authorization"):
        raise Forbidden("This route needs the operator's admin API key (the `[admin] api_key` setting, PATCHBAY_ADMIN_API_KEY)")
    raise Unauthenticated(f"Unauthorized: no credential was sent; send {OPERATOR_CREDENTIALS}")


@routes.post("/accounts")
@accepts(CreateAccountDto)
@returns(CreatedAccount, status=201, description="Created, or the account of this externalId")
async def create_account(request: web.Request) -> web.Response:
    """Create an account (``{name, plan?, externalId?}``; idempotent by externalId). Operator only."""
    _operator_only(request)
    dto = structure(await read_object(request), CreateAccountDto)
    workspace, created = await accounts.create_account(request.app[SERVICES], name=dto.name, plan=dto.plan, external_id=dto.externalId)
    return reply(request, {**account_json(workspace), "created": created}, status=201)


@routes.get("/accounts")
@query(**PAGE_QUERY, externalId={"type": "string"}, plan={"type": "string"})
@returns(AccountPage)
async def list_accounts(request: web.Request) -> web.Response:
    """Every account, oldest first (``?externalId=``, ``?plan=`` filter). Operator only."""
    _operator_only(request)
    page, limit = page_params(request)
    rows, total = await accounts.account_page(
        request.app[SERVICES], external_id=request.query.get("externalId"), plan=request.query.get("plan"), page=page, limit=limit
    )
    return reply(request, {"data": [account_json(w) for w in rows], "page": page, "limit": limit, "total": total})


@routes.get("/accounts/{id}")
@returns(AccountDetail)
async def get_account(request: web.Request) -> web.Response:
    """One account: the operator, or the account's own credential."""
    account_id = request.match_info["id"]
    await _caller(request, account_id)
    workspace, members = await accounts.get_account(request.app[SERVICES], account_id)
    return reply(request, {**account_json(workspace), "memberCount": members})


@routes.patch("/accounts/{id}")
@accepts(UpdateAccountDto)
@returns(Account)
async def update_account(request: web.Request) -> web.Response:
    """Change an account: the operator any of name, plan, externalId, settings; the account's own
    credential with ``workspace.admin`` its name and settings."""
    account_id = request.match_info["id"]
    principal = await _caller(request, account_id)
    body = await read_object(request)
    dto = structure(body, UpdateAccountDto)
    unknown = set(body) - set(EDITABLE)
    if unknown:
        raise Invalid(f"Validation failed: unknown field(s) {', '.join(sorted(unknown))}")
    if principal is not None:
        if not principal.can("workspace.admin"):
            raise Forbidden("Missing permission: workspace.admin")
        if set(body) - OWNER_EDITABLE:
            raise Forbidden("Only the operator can change " + ", ".join(sorted(set(body) - OWNER_EDITABLE)))
    if "name" in body and not (dto.name or "").strip():
        raise Invalid("Validation failed: name must be a non-empty string")
    if "plan" in body and dto.plan not in PLANS:
        raise Invalid(f"Validation failed: plan must be one of {', '.join(PLANS)}")
    if "settings" in body and dto.settings is None:
        raise Invalid("Validation failed: settings must be an object")
    changes = {attribute: body[field].strip() if field == "name" else body[field] for field, attribute in EDITABLE.items() if field in body}
    workspace = await accounts.update_account(request.app[SERVICES], account_id, changes)
    return reply(request, account_json(workspace))


@routes.delete("/accounts/{id}")
@returns(AccountDeleted)
async def delete_account(request: web.Request) -> web.Response:
    """Delete an account and everything it owns. Operator only."""
    _operator_only(request)
    await accounts.delete_account(request.app[SERVICES], request.match_info["id"])
    return reply(request, {"id": request.match_info["id"], "deleted": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
