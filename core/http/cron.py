"""``GET /api/cron/<name>``: runs a periodic job now, for an external scheduler (4.22).

Open with ``Authorization: Bearer <PATCHBAY_CRON_SECRET>``; with no secret configured these routes
answer 401. The job itself is registered by its feature (``CronRegistry.add``).
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bearer import bearer_matches, bearer_refusal
from patchbay.core.http.errors import not_found, unauthorized
from patchbay.core.http.probe_models import CronRun
from patchbay.core.http.responses import reply, returns

#: The periodic jobs of spec 4.22.
CRON_JOB_NAMES = (
    "token-refresh",
    "retry-failed-syncs",
    "resume-imports",
    "renew-webhook-subscriptions",
    "poll-triggers",
    "run-schedules",
    "connection-health",
    "data-sync",
)


@returns(CronRun)
async def run_cron_job(request: web.Request) -> web.Response:
    """Run the named periodic job now and answer its summary."""
    secret = request.app[SERVICES].settings.cron_secret
    if not bearer_matches(request, secret):
        raise unauthorized(bearer_refusal(request, secret, setting="`cron_secret` (PATCHBAY_CRON_SECRET)"))
    name = request.path.rsplit("/", 1)[1]
    job = request.app[SERVICES].cron.jobs.get(name)
    if job is None:
        raise not_found(f"Cron job not found: {name}")
    summary = await job.run(request.app[SERVICES])
    return reply(request, {"job": name, "ok": True, "result": summary or {}})


def setup(app: web.Application) -> None:
    for name in CRON_JOB_NAMES:
        app.router.add_get(f"/api/cron/{name}", run_cron_job)
