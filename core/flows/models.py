"""Flows, their version snapshots, executions with their steps, trigger subscriptions, schedules and
templates (spec 2.4-2.10)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, JsonType, TenantScoped, TimestampMixin

FLOW_STATUSES = ("draft", "published", "archived")
EXECUTION_STATUSES = ("pending", "running", "waiting", "completed", "failed")


class Flow(IdMixin, TimestampMixin, TenantScoped, Base):
    """A trigger and an ordered chain of steps.

    ``steps`` is what the user edits; ``published_version`` names the snapshot that live triggers and
    schedules run, which an edit does not change (the flow turns draft, the published version keeps
    running). ``is_active`` is the toggle: false pauses live runs of a published flow."""

    __tablename__ = "flows"

    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="draft")
    steps: Mapped[list[Any]] = mapped_column(default=list)
    #: what starts the flow, descriptive: {providerType, triggerName, kind} (templates fill it)
    trigger: Mapped[dict[str, Any] | None]
    version: Mapped[int] = mapped_column(Integer, default=0)
    published_version: Mapped[int | None] = mapped_column(Integer)
    published_at: Mapped[datetime | None]
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    archived_at: Mapped[datetime | None]
    template_slug: Mapped[str | None] = mapped_column(String(120))


class FlowVersion(IdMixin, TimestampMixin, TenantScoped, Base):
    """One publish or revert: the steps as they were, kept forever."""

    __tablename__ = "flow_versions"
    __table_args__ = (UniqueConstraint("flow_id", "version"),)

    flow_id: Mapped[str] = mapped_column(String(36), ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    steps: Mapped[list[Any]] = mapped_column(default=list)
    published_at: Mapped[datetime]
    #: publish | revert
    action: Mapped[str] = mapped_column(String(20), default="publish")
    reverted_from: Mapped[int | None] = mapped_column(Integer)


class FlowExecution(IdMixin, TimestampMixin, TenantScoped, Base):
    """One run of a flow: pending -> running -> completed | failed; a running execution may wait
    (``waiting`` until ``resume_at``: a ``wait`` step or an approval) and run again.

        ``version`` is the snapshot it runs; a run of steps that were never published (a test, or the
        replay of a never-published flow) carries its ``steps`` itself. ``dedupe_key`` makes a trigger
        event, a polled item or a schedule tick start the flow once."""

    __tablename__ = "flow_executions"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (
        Index("ix_flow_executions_flow_created", "flow_id", "created_at"),
        Index("ix_flow_executions_workspace_created", "workspace_id", "created_at"),
        Index("ix_flow_executions_workspace_status_created", "workspace_id", "status", "created_at"),
        Index("ix_flow_executions_status_lease", "status", "lease_until"),
    )

    flow_id: Mapped[str] = mapped_column(String(36), ForeignKey("flows.id", ondelete="CASCADE"))
    version: Mapped[int | None] = mapped_column(Integer)
    steps: Mapped[list[Any] | None]
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    #: webhook | poll | schedule | records | test | replay
    trigger_source: Mapped[str] = mapped_column(String(20))
    trigger_payload: Mapped[dict[str, Any] | None]
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    replay_of: Mapped[str | None] = mapped_column(String(36))
    subscription_id: Mapped[str | None] = mapped_column(String(36))
    dedupe_key: Mapped[str | None] = mapped_column(String(300), unique=True)
    #: while ``waiting``: when the execution runs again (a job due then resumes it)
    resume_at: Mapped[datetime | None]
    #: while ``running``: renewed by the process running it; the reaper resumes or fails an
    #: execution whose lease ran out (its process died)
    lease_until: Mapped[datetime | None]


class FlowExecutionStep(IdMixin, TenantScoped, Base):
    """One step of an execution: its rendered input, its output, and its error."""

    __tablename__ = "flow_execution_steps"
    __table_args__ = (UniqueConstraint("execution_id", "position"),)

    execution_id: Mapped[str] = mapped_column(String(36), ForeignKey("flow_executions.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    step_id: Mapped[str] = mapped_column(String(100))
    type: Mapped[str] = mapped_column(String(50))
    #: completed | failed | skipped
    status: Mapped[str] = mapped_column(String(20))
    input: Mapped[dict[str, Any] | None]
    output: Mapped[Any] = mapped_column(JsonType, nullable=True)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    duration_ms: Mapped[int | None] = mapped_column(Integer)


class FlowLoopItem(IdMixin, TenantScoped, Base):
    """A completed item of a loop still running in an execution of the job queue: what a resumed
    execution reuses instead of running the item again (``loop_progress``). Deleted when the loop's
    step record is stored, which holds every item's result."""

    __tablename__ = "flow_loop_items"
    __table_args__ = (UniqueConstraint("execution_id", "position", "item_index"),)

    execution_id: Mapped[str] = mapped_column(String(36), ForeignKey("flow_executions.id", ondelete="CASCADE"))
    #: the loop step's position in the execution's plan, and its id (checked on resume)
    position: Mapped[int] = mapped_column(Integer)
    step_id: Mapped[str] = mapped_column(String(100))
    item_index: Mapped[int] = mapped_column(Integer)
    #: the item's rendered value: reused only while the resumed loop renders the same value
    item: Mapped[Any] = mapped_column(JsonType, nullable=True)
    #: the item's entry of the loop's ``results``
    result: Mapped[dict[str, Any]]


class FlowTriggerSubscription(IdMixin, TimestampMixin, TenantScoped, Base):
    """A provider trigger that starts a flow: webhook events, or items found by polling from a
    stored cursor (spec 2.7)."""

    __tablename__ = "flow_trigger_subscriptions"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (Index("ix_flow_trigger_subscriptions_match", "workspace_id", "provider_type", "kind"),)

    flow_id: Mapped[str] = mapped_column(String(36), ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    provider_type: Mapped[str] = mapped_column(String(100))
    trigger_name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(10))
    connection_id: Mapped[str | None] = mapped_column(String(36))
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    cursor: Mapped[Any] = mapped_column(JsonType, nullable=True)
    last_polled_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)


class FlowSchedule(IdMixin, TimestampMixin, TenantScoped, Base):
    """Runs a flow on a five-field cron expression in a timezone."""

    __tablename__ = "flow_schedules"

    flow_id: Mapped[str] = mapped_column(String(36), ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    cron: Mapped[str] = mapped_column(String(100))
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    next_run_at: Mapped[datetime | None] = mapped_column(index=True)
    last_run_at: Mapped[datetime | None]


class FlowTemplate(IdMixin, TimestampMixin, Base):
    """A reusable flow. System templates have no workspace; a workspace's own templates are
    private (visible to it), public (visible to all) or pending_review (visible to it)."""

    __tablename__ = "flow_templates"

    slug: Mapped[str] = mapped_column(String(120), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    category: Mapped[str] = mapped_column(String(50), index=True)
    trigger: Mapped[dict[str, Any] | None]
    steps: Mapped[list[Any]] = mapped_column(default=list)
    #: providers the steps need a connection to, besides the trigger's
    providers: Mapped[list[Any]] = mapped_column(default=list)
    visibility: Mapped[str] = mapped_column(String(20), default="private")
    is_system: Mapped[bool] = mapped_column(Boolean, default=False)
    workspace_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    source_flow_id: Mapped[str | None] = mapped_column(String(36))
    clone_count: Mapped[int] = mapped_column(Integer, default=0)


class FlowApproval(IdMixin, TimestampMixin, TenantScoped, Base):
    """A person's answer that an ``approval`` step of an execution waits for: pending, then
    approved or denied (by an approver, through the API or a signed link) or timeout."""

    __tablename__ = "flow_approvals"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (UniqueConstraint("execution_id", "step_id"), Index("ix_flow_approvals_workspace_status", "workspace_id", "status"))

    execution_id: Mapped[str] = mapped_column(String(36), ForeignKey("flow_executions.id", ondelete="CASCADE"))
    flow_id: Mapped[str] = mapped_column(String(36))
    step_id: Mapped[str] = mapped_column(String(100))
    #: pending | approved | denied | timeout
    status: Mapped[str] = mapped_column(String(20), default="pending")
    message: Mapped[str | None] = mapped_column(Text)
    expires_at: Mapped[datetime]
    decided_by: Mapped[str | None] = mapped_column(String(320))
    decided_at: Mapped[datetime | None]
    note: Mapped[str | None] = mapped_column(Text)
