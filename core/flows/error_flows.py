"""The workspace's error flow (``workspace_settings``): started by every failed execution, in the
transaction that stores the failure, so it fires exactly when the failure is stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.flows.models import Flow
from patchbay.core.flows.workspace_settings import flow_settings

if TYPE_CHECKING:
    from patchbay.core.flows.runner import Outcome
    from patchbay.core.services import Services

#: the trigger source of an error flow's runs; their failures start nothing
SOURCE = "error"


def failed_step(outcome: Outcome) -> str | None:
    """The step that failed the execution: the last failed record (a control step's failure comes
    from a step inside it, recorded after it)."""
    failed = [record for record in outcome.records if record.status == "failed"]
    return max(failed, key=lambda record: record.position).step_id if failed else None


async def start_error_flows(services: Services, session: AsyncSession, failures: list[tuple[dict[str, Any], Outcome]]) -> list[str]:
    """Queue a run of its workspace's error flow for each failed execution (in ``session``'s
    transaction), unless it is a run of the error flow or started by one; answers the ids queued."""
    from patchbay.core.flows.engine import create_executions

    rows = []
    for execution, outcome in failures:
        if execution.get("trigger_source") == SOURCE:
            continue
        error_flow_id = (await flow_settings(services, execution["workspace_id"])).error_flow_id
        if error_flow_id is None or error_flow_id == execution["flow_id"]:
            continue
        flows = {
            row.id: row
            for row in await session.execute(
                select(Flow.id, Flow.name, Flow.published_version, Flow.status, Flow.is_active).where(
                    Flow.id.in_((error_flow_id, execution["flow_id"])), Flow.workspace_id == execution["workspace_id"]
                )
            )
        }
        error_flow = flows.get(error_flow_id)
        if error_flow is None or error_flow.published_version is None or error_flow.status == "archived" or not error_flow.is_active:
            continue
        failed_flow = flows.get(execution["flow_id"])
        rows.append(
            {
                "workspace_id": execution["workspace_id"],
                "flow_id": error_flow_id,
                "version": error_flow.published_version,
                "trigger_source": SOURCE,
                "trigger_payload": {
                    "executionId": execution["id"],
                    "flowId": execution["flow_id"],
                    "flowName": failed_flow.name if failed_flow else None,
                    "stepId": failed_step(outcome),
                    "error": outcome.error,
                },
                "dedupe_key": f"error-flow:{execution['id']}",
            }
        )
    return await create_executions(services, session, rows)
