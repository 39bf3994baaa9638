"""indexes of the console's Logs timeline and connection list: (workspace_id, created_at) on
proxy_call_logs, webhook_deliveries and connections; (workspace_id, status, created_at) on
flow_executions

Revision ID: console_logs_0001
Revises:
Create Date: 2026-11-27 13:45:00
"""

from alembic import op

revision = "console_logs_0001"
down_revision = None
branch_labels = ("console_logs",)
depends_on = ("connections_0002", "webhooks_0002", "flows_0001")

INDEXES = (
    ("ix_connections_workspace_created", "connections", ["workspace_id", "created_at"]),
    ("ix_proxy_call_logs_workspace_created", "proxy_call_logs", ["workspace_id", "created_at"]),
    ("ix_webhook_deliveries_workspace_created", "webhook_deliveries", ["workspace_id", "created_at"]),
    ("ix_flow_executions_workspace_status_created", "flow_executions", ["workspace_id", "status", "created_at"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
