"""drop the workspace_id indexes that a composite index or unique constraint leading with
workspace_id makes redundant (every insert wrote both)

Revision ID: console_logs_0002
Revises: console_logs_0001
Create Date: 2026-11-28 09:20:00
"""

from alembic import op

revision = "console_logs_0002"
down_revision = "console_logs_0001"
branch_labels = None
depends_on = ("tenancy_0004", "flows_0003", "data_0001")

#: (index, table); each table keeps an index or unique constraint that leads with workspace_id
REDUNDANT = (
    ("ix_connections_workspace_id", "connections"),
    ("ix_proxy_call_logs_workspace_id", "proxy_call_logs"),
    ("ix_webhook_events_workspace_id", "webhook_events"),
    ("ix_webhook_deliveries_workspace_id", "webhook_deliveries"),
    ("ix_webhook_subscriptions_workspace_id", "webhook_subscriptions"),
    ("ix_workspace_audit_events_workspace_id", "workspace_audit_events"),
    ("ix_flow_executions_workspace_id", "flow_executions"),
    ("ix_flow_trigger_subscriptions_workspace_id", "flow_trigger_subscriptions"),
    ("ix_flow_approvals_workspace_id", "flow_approvals"),
    ("ix_leads_workspace_id", "leads"),
    ("ix_records_workspace_id", "records"),
    ("ix_byoa_credentials_workspace_id", "byoa_credentials"),
    ("ix_usage_counters_workspace_id", "usage_counters"),
    ("ix_data_tables_workspace_id", "data_tables"),
)


def upgrade() -> None:
    for name, table in REDUNDANT:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table in reversed(REDUNDANT):
        op.create_index(name, table, ["workspace_id"], unique=False)
