"""Server-side sign-in sessions: the hourly purge of ended and expired rows."""

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import SignInSession
from patchbay.core.users.sessions import end_session, find_session, start_session


@pytest.mark.slow  # about 6 s (setup and call)
async def test_the_purge_removes_ended_and_expired_sessions_only(idp):
    box = idp.app[SERVICES].secrets
    async with idp.app[SERVICES].db.transaction() as db:
        live_token, live = await start_session(db, box, idp.user["id"], 3600)
        _, ended = await start_session(db, box, idp.user["id"], 3600)
        expired_token, expired = await start_session(db, box, idp.user["id"], 3600)
        await end_session(db, ended.id)
        await db.execute(update(SignInSession).where(SignInSession.id == expired.id).values(expires_at=utcnow() - timedelta(seconds=1)))
    async with idp.app[SERVICES].db.session() as db:
        assert await find_session(db, box, expired_token) is None
    summary = await idp.app[SERVICES].cron.jobs["identity-sessions"].run(idp.app[SERVICES])
    assert summary == {"sessionsPurged": 2}
    async with idp.app[SERVICES].db.session() as db:
        assert (await db.scalars(select(SignInSession.id))).all() == [live.id]
        assert await find_session(db, box, live_token) == live
