"""A workspace's settings in the console: API keys and members (admin: invites, role changes,
removals), the audit trail of those changes (admin), the approvals queue, alert subscriptions, plan and usage. Every write calls the service the API route calls."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from patchbay.core.alerts import service as alerts
from patchbay.core.alerts.models import EVENT_TYPES
from patchbay.core.approvals import service as approvals
from patchbay.core.billing import service as billing
from patchbay.core.console.form_models import CreateAlertForm, CreateKeyForm, CsrfOnlyForm, DecisionForm, InviteForm, MemberRoleForm
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, render, see_other, signed_in, view_of
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Conflict, Invalid
from patchbay.core.http.responses import HTML, REDIRECT, returns
from patchbay.core.security import service as security
from patchbay.core.security.api_keys import api_key_state
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.workspaces import service as workspaces
from patchbay.core.workspaces.audit import Actor, events_page
from patchbay.core.workspaces.mail import invite_url
from patchbay.core.workspaces.models import ROLES

routes = web.RouteTableDef()
NAV = NavItem("Settings", "settings", NAV_ORDER["Settings"])
BASE = PREFIX + "/w/{workspace_id}/settings"


def _actor(view: View) -> Actor:
    """The signed-in person, as the audit trail names who made a change."""
    return Actor("user", view.person.user_id, view.person.email)


#: the settings' tabs: (path under the workspace, label, weakest role that sees it)
TABS = (
    ("settings/keys", "API keys", "admin"),
    ("settings/members", "Members", "admin"),
    ("settings/audit", "Audit", "admin"),
    ("settings/approvals", "Approvals", "viewer"),
    ("settings/alerts", "Alerts", "viewer"),
    ("settings/plan", "Plan and usage", "viewer"),
)


def _render(request: web.Request, view: View, template: str, tab: str, context: dict, *, status: int = 200) -> web.Response:
    tabs = [(path, label) for path, label, role in TABS if view.can(role)]
    return render(request, template, {"tabs": tabs, "tab": tab, **context}, view=view, current="settings", status=status)


@routes.get(BASE)
@returns(REDIRECT, status=303, description="To the first tab the person's role sees, or to the sign-in")
@returns(HTML, status=404, description="No such workspace, or not one of the person's")
async def settings_home(request: web.Request) -> web.StreamResponse:
    """The settings: the first tab the person's role sees."""
    view = await view_of(request, await signed_in(request))
    first = next(path for path, _label, role in TABS if view.can(role))
    raise see_other(request, view.url(first))


# -- API keys -------------------------------------------------------------------------------------


async def _keys_page(request: web.Request, view: View, *, issued=None, error: str | None = None, status: int = 200) -> web.Response:
    keys = await security.workspace_api_keys(view.services, view.workspace_id)
    rows = [(key, api_key_state(key)) for key in keys]
    return _render(request, view, "console/settings_keys.html", "settings/keys", {"keys": rows, "issued": issued, "error": error}, status=status)


@routes.get(BASE + "/keys")
@page(role="admin")
async def keys_page(request: web.Request, view: View) -> web.Response:
    """The workspace's API keys (never a key itself), and the form that makes one."""
    return await _keys_page(request, view)


@routes.post(BASE + "/keys")
@returns(HTML, description="Made: the page with the key, shown this once")
@returns(HTML, status=400, description="The page with why the key was not made")
@action(role="admin", form=CreateKeyForm, description=None)
async def create_key(request: web.Request, view: View, form: CreateKeyForm) -> web.Response:
    """Make an API key; the page shows the key this once."""
    permissions = sorted(ROLE_PERMISSIONS["viewer"]) if form.access == "read" else None
    expires_in = None
    if form.expiresInDays:
        if not form.expiresInDays.isdigit() or not 0 < int(form.expiresInDays) <= 3650:
            return await _keys_page(request, view, error="Days until expiry must be a whole number from 1 to 3650.", status=400)
        expires_in = timedelta(days=int(form.expiresInDays))
    try:
        issued = await security.issue_workspace_api_key(
            view.services, view.workspace_id, name=form.name, permissions=permissions, expires_in=expires_in, actor=_actor(view)
        )
    except Invalid as error:
        return await _keys_page(request, view, error=error.message, status=400)
    return await _keys_page(request, view, issued=issued)


@routes.post(BASE + "/keys/{key_id}/revoke")
@action(role="admin", form=CsrfOnlyForm)
async def revoke_key(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Revoke an API key of the workspace (404 for another workspace's)."""
    await security.revoke_workspace_api_key(view.services, view.workspace_id, request.match_info["key_id"], actor=_actor(view))
    raise see_other(request, view.url("settings/keys"))


# -- members and invites --------------------------------------------------------------------------


async def _members_page(request: web.Request, view: View, *, invited: str | None = None, error: str | None = None, status: int = 200) -> web.Response:
    members = await workspaces.members_of(view.services, view.workspace_id)
    invites = await workspaces.open_invites(view.services, view.workspace_id)
    context = {"members": members, "invites": invites, "roles": ROLES, "invited": invited, "error": error}
    return _render(request, view, "console/settings_members.html", "settings/members", context, status=status)


@routes.get(BASE + "/members")
@page(role="admin")
async def members_page(request: web.Request, view: View) -> web.Response:
    """The workspace's members with their roles, and its open invites."""
    return await _members_page(request, view)


@routes.post(BASE + "/members/invite")
@returns(HTML, description="Invited: the page with the invite link, shown this once")
@returns(HTML, status=400, description="The page with why the invite was not made")
@action(role="admin", form=InviteForm, description=None)
async def invite_member(request: web.Request, view: View, form: InviteForm) -> web.Response:
    """Invite an email address (the invite is emailed; the page shows its link this once)."""
    try:
        _invite, token = await workspaces.invite(
            view.services, workspace_id=view.workspace_id, email=form.email, role=form.role, hours=None, actor=_actor(view)
        )
    except Invalid as error:
        return await _members_page(request, view, error=error.message, status=400)
    return await _members_page(request, view, invited=invite_url(view.services.settings, token=token, workspace_id=view.workspace_id))


@routes.post(BASE + "/members/invites/{invite_id}/revoke")
@action(role="admin", form=CsrfOnlyForm, description="Withdrawn: back to the members")
async def revoke_invite(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Withdraw an open invite: its link stops working (404 for an invite not open in this workspace)."""
    await workspaces.revoke_invite(view.services, workspace_id=view.workspace_id, invite_id=request.match_info["invite_id"], actor=_actor(view))
    raise see_other(request, view.url("settings/members"))


@routes.post(BASE + "/members/{user_id}/role")
@returns(HTML, status=409, description="The page with why the role was not changed (the workspace's last admin)")
@action(role="admin", form=MemberRoleForm, description="Changed: back to the members (to the workspace's home for an admin who gave up the role)")
async def change_member_role(request: web.Request, view: View, form: MemberRoleForm) -> web.StreamResponse:
    """Give a member another role (404 for someone who is not a member of this workspace)."""
    user_id = request.match_info["user_id"]
    try:
        await workspaces.change_member_role(view.services, workspace_id=view.workspace_id, user_id=user_id, role=form.role, actor=_actor(view))
    except Conflict as error:
        return await _members_page(request, view, error=error.message, status=409)
    if user_id == view.person.user_id and form.role != "admin":
        raise see_other(request, view.url())
    raise see_other(request, view.url("settings/members"))


@routes.post(BASE + "/members/{user_id}/remove")
@returns(HTML, status=409, description="The page with why the member was not removed (the workspace's last admin)")
@action(role="admin", form=CsrfOnlyForm, description="Removed: back to the members (to the console's start for an admin who left)")
async def remove_member(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Remove a member: their next page of this workspace is refused (404 for someone who is not a
    member of it)."""
    user_id = request.match_info["user_id"]
    try:
        await workspaces.remove_member(view.services, workspace_id=view.workspace_id, user_id=user_id, actor=_actor(view))
    except Conflict as error:
        return await _members_page(request, view, error=error.message, status=409)
    raise see_other(request, PREFIX + "/" if user_id == view.person.user_id else view.url("settings/members"))


# -- audit trail ----------------------------------------------------------------------------------

#: the events the Audit tab shows (the API pages through all of them)
AUDIT_SHOWN = 100


@routes.get(BASE + "/audit")
@page(role="admin")
async def audit_page(request: web.Request, view: View) -> web.Response:
    """The latest changes of the workspace's members, invites and API keys, and who made them."""
    events, more = await events_page(view.services, workspace_id=view.workspace_id, action=None, before=None, limit=AUDIT_SHOWN)
    return _render(request, view, "console/settings_audit.html", "settings/audit", {"events": events, "more": more is not None})


# -- approvals ------------------------------------------------------------------------------------


@routes.get(BASE + "/approvals")
@page()
async def approvals_page(request: web.Request, view: View) -> web.Response:
    """The approvals queue (pending requests to connect a provider) and the latest decisions."""
    pending, _ = await approvals.request_page(view.services, workspace_id=view.workspace_id, status="pending", page=1, limit=100)
    recent, _ = await approvals.request_page(view.services, workspace_id=view.workspace_id, status=None, page=1, limit=20)
    decided = [row for row in recent if row.status != "pending"]
    return _render(request, view, "console/settings_approvals.html", "settings/approvals", {"pending": pending, "decided": decided})


@routes.post(BASE + "/approvals/{request_id}/approve")
@action(role="manager", form=DecisionForm)
async def approve(request: web.Request, view: View, form: DecisionForm) -> web.StreamResponse:
    """Approve a pending request (an API-key connection is made now); the policy's approvers only."""
    await approvals.approve(
        view.services, workspace_id=view.workspace_id, request_id=request.match_info["request_id"], principal=view.principal, note=form.note
    )
    raise see_other(request, view.url("settings/approvals"))


@routes.post(BASE + "/approvals/{request_id}/deny")
@action(role="manager", form=DecisionForm)
async def deny(request: web.Request, view: View, form: DecisionForm) -> web.StreamResponse:
    """Deny a pending request; the policy's approvers only."""
    await approvals.deny(view.services, workspace_id=view.workspace_id, request_id=request.match_info["request_id"], principal=view.principal, note=form.note)
    raise see_other(request, view.url("settings/approvals"))


# -- alerts ---------------------------------------------------------------------------------------


async def _alerts_page(request: web.Request, view: View, *, error: str | None = None, status: int = 200) -> web.Response:
    rows = await alerts.list_alerts(view.services, view.workspace_id)
    channels = sorted(view.services.registry.objects("alert_channels"))
    context = {"alerts": rows, "channels": channels, "event_types": EVENT_TYPES, "error": error}
    return _render(request, view, "console/settings_alerts.html", "settings/alerts", context, status=status)


@routes.get(BASE + "/alerts")
@page()
async def alerts_page(request: web.Request, view: View) -> web.Response:
    """The workspace's alert subscriptions."""
    return await _alerts_page(request, view)


@routes.post(BASE + "/alerts")
@returns(HTML, status=400, description="The page with why the subscription was not made")
@action(role="manager", form=CreateAlertForm)
async def create_alert(request: web.Request, view: View, form: CreateAlertForm) -> web.StreamResponse:
    """Subscribe a target to alerts."""
    events = [value for value in (await request.post()).getall("event", []) if isinstance(value, str)]
    unknown = sorted(set(events) - set(EVENT_TYPES))
    try:
        if unknown:
            raise Invalid(f"Validation failed: unknown event type(s): {', '.join(unknown)}")
        await alerts.create_alert(view.services, view.workspace_id, channel=form.channel, target=form.target, event_types=events or None, is_active=True)
    except Invalid as error:
        return await _alerts_page(request, view, error=error.message, status=400)
    raise see_other(request, view.url("settings/alerts"))


@routes.post(BASE + "/alerts/{alert_id}/delete")
@action(role="manager", form=CsrfOnlyForm)
async def delete_alert(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Delete an alert subscription (404 for another workspace's)."""
    await alerts.delete_alert(view.services, view.workspace_id, request.match_info["alert_id"])
    raise see_other(request, view.url("settings/alerts"))


# -- plan and usage -------------------------------------------------------------------------------


@routes.get(BASE + "/plan")
@page()
async def plan_page(request: web.Request, view: View) -> web.Response:
    """The workspace's plan, its limits and this month's usage."""
    plan, _limits, subscription, provider, _available = await billing.plan_of(view.services, view.workspace_id)
    _plan, usage = await billing.usage_of(view.services, view.workspace_id)
    context = {"plan": plan, "subscription": subscription, "provider": provider, "usage": usage}
    return _render(request, view, "console/settings_plan.html", "settings/plan", context)
