"""Imports every model module so that ``Base.metadata`` holds the whole schema (Alembic's env and the
schema-drift test read it). Add a line here when a feature adds a models module."""

from patchbay.core.billing import models as billing  # noqa: F401
from patchbay.core.connections import models as connections  # noqa: F401
from patchbay.core.jobs import models as jobs  # noqa: F401
from patchbay.core.ratelimit import models as ratelimit  # noqa: F401
from patchbay.core.security import models as security  # noqa: F401
from patchbay.core.storage.base import Base
from patchbay.core.users import models as users  # noqa: F401
from patchbay.core.workspaces import models as workspaces  # noqa: F401

metadata = Base.metadata
