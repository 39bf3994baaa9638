"""The bodies the ``/accounts`` routes (``core.accounts.routes``) read and answer: the models that
validate and serialize them are the ones ``/openapi.json`` publishes. An account is a workspace seen
from outside, with its settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchbay.core.http.responses import page_of, response_model
from patchbay.core.workspaces.api_models import WorkspaceOut, workspace_json
from patchbay.core.workspaces.models import Workspace

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class CreateAccountDto:
    """``plan`` defaults to ``[workspaces] default_plan``; idempotent by ``externalId``."""

    name: str
    plan: str | None = None
    externalId: str | None = None


@dataclass
class UpdateAccountDto:
    """Any of them; the account's own credential changes only the name and settings."""

    name: str | None = None
    plan: str | None = None
    externalId: str | None = None
    settings: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class Account(WorkspaceOut):
    settings: dict[str, Any]


@response_model
class AccountDetail(Account):
    """An account with how many users are its members."""

    memberCount: int


@response_model
class CreatedAccount(Account):
    """``created`` is false when an account of this ``externalId`` already existed."""

    created: bool


AccountPage = page_of(Account)


@response_model
class AccountDeleted:
    id: str
    deleted: bool


def account_json(workspace: Workspace) -> dict[str, Any]:
    """An :class:`Account`."""
    return {**workspace_json(workspace), "settings": dict(workspace.settings or {})}
