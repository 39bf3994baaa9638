"""The features the application is built from, in order. Each module has ``setup(app)``, which adds
its routes, job kinds, cron jobs and start-up work. Routes are matched in this order."""

FEATURES: tuple[str, ...] = (
    "patchbay.core.http.root",
    "patchbay.core.http.providers",
    "patchbay.core.http.cron",
    "patchbay.core.billing.routes",
    "patchbay.core.approvals.routes",
    "patchbay.core.workspaces.routes",
    "patchbay.core.http.openapi",
    "patchbay.core.identity.feature",
    "patchbay.core.jobs.maintenance",
)
