"""The platform domains install their runtime parts on the services, without a web application:
job kinds, periodic jobs, plan limits with their counters, the data erasers; and their work runs
with the services alone."""

from patchbay.core.billing.limits import services_of
from patchbay.core.services import build_services


async def test_build_services_installs_the_platform_parts_without_an_app(make_settings):
    services = build_services(make_settings(plans={"free": {"table_rows": 7}}))
    try:
        assert {"workspaces.invite_email", "records.sync", "compliance.delete_user_data"} <= set(services.jobs.kinds)
        assert {"maintenance", "data-sync"} <= set(services.cron.jobs)
        assert services.limits.limit("free", "table_rows") == 7
        assert "table_rows" in services.limits.counters
        assert "users" in services.erasers
        async with services.db.session() as session:
            assert services_of(session) is services  # services handed only a session find the plan limits
    finally:
        await services.db.close()


async def test_maintenance_and_deletion_run_with_the_services_alone(make_settings):
    from sqlalchemy import select

    from patchbay.core.compliance.service import DELETE_JOB, request_deletion
    from patchbay.core.jobs.models import Job

    services = build_services(make_settings())
    try:
        assert (await services.cron.jobs["maintenance"].run(services))["jobsPurged"] == 0
        deletion = await request_deletion(services, source="user", subject="nobody")
        async with services.db.session() as session:
            job = await session.scalar(select(Job).where(Job.kind == DELETE_JOB))
        assert deletion.status == "pending" and job.payload == {"request_id": deletion.id}
    finally:
        await services.db.close()
