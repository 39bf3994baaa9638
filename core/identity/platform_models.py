"""The bodies the platform REST (``core.identity.platform``) reads and answers: the models that
validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass

from patchbay.core.http.responses import page_of, response_model
from patchbay.core.workspaces.api_models import WorkspaceOut

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class CreateOrganizationDto:
    """``plan`` defaults to the deployment's ``[workspaces] default_plan``."""

    name: str
    plan: str | None = None
    externalId: str | None = None


@dataclass
class UpdateOrganizationDto:
    """Any of them; the plan is for unbound platform clients only."""

    name: str | None = None
    plan: str | None = None


@dataclass
class AddMemberDto:
    userId: str
    role: str = "viewer"


@dataclass
class UserProfile:
    """The profile fields a platform client sets (null clears one on update)."""

    name: str | None = None
    givenName: str | None = None
    familyName: str | None = None
    picture: str | None = None
    phoneNumber: str | None = None
    userType: str | None = None


@dataclass(kw_only=True)
class CreateUserDto(UserProfile):
    """A new user; a workspace-bound client makes it a member with ``role``."""

    email: str
    password: str | None = None
    emailVerified: bool | None = None
    role: str = "viewer"


@dataclass
class UpdateUserDto(UserProfile):
    """Any of the profile fields, ``emailVerified`` and ``password`` (at least 8 characters)."""

    emailVerified: bool | None = None
    password: str | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class Organization(WorkspaceOut):
    """A workspace, as the platform REST calls it (``core.workspaces.api_models.workspace_json``)."""


OrganizationPage = page_of(Organization)


@response_model
class PlatformUser:
    id: str
    email: str
    emailVerified: bool
    name: str | None
    givenName: str | None
    familyName: str | None
    picture: str | None
    phoneNumber: str | None
    userType: str | None
    createdAt: str | None
    updatedAt: str | None


PlatformUserPage = page_of(PlatformUser)


@response_model
class OrganizationMembership:
    organizationId: str
    userId: str
    role: str
    createdAt: str | None


@response_model
class MembershipList:
    data: list[OrganizationMembership]
