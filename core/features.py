"""The features the application is built from, in order. Each module has ``setup(app)``, which adds
its routes, job kinds, cron jobs and start-up work. Routes are matched in this order."""

FEATURES: tuple[str, ...] = (
    "patchbay.core.http.root",
    "patchbay.core.http.providers",
    "patchbay.core.connections.feature",
    "patchbay.core.http.cron",
    "patchbay.core.billing.routes",
    "patchbay.core.approvals.routes",
    "patchbay.core.workspaces.routes",
    "patchbay.core.accounts.routes",
    "patchbay.core.compliance.routes",
    "patchbay.core.flows.routes_flows",
    "patchbay.core.flows.routes_executions",
    "patchbay.core.flows.routes_triggers",
    "patchbay.core.flows.routes_schedules",
    "patchbay.core.flows.routes_templates",
    "patchbay.core.alerts.routes",
    "patchbay.core.actions.routes",
    "patchbay.core.tables.routes",
    "patchbay.core.records.routes",
    "patchbay.core.webhooks.feature",
    "patchbay.core.leads.feature",
    "patchbay.core.crm_push.feature",
    "patchbay.core.http.openapi",
    "patchbay.core.identity.feature",
    "patchbay.core.jobs.maintenance",
)
