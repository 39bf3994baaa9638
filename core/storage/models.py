"""Imports every model module so that ``Base.metadata`` holds the whole schema (Alembic's env and the
schema-drift test read it). Add a line here when a feature adds a models module."""

from patchbay.core.alerts import models as alerts  # noqa: F401
from patchbay.core.approvals import models as approvals  # noqa: F401
from patchbay.core.billing import models as billing  # noqa: F401
from patchbay.core.compliance import models as compliance  # noqa: F401
from patchbay.core.connect_ui import models as connect_ui  # noqa: F401
from patchbay.core.connections import models as connections  # noqa: F401
from patchbay.core.console import models as console  # noqa: F401
from patchbay.core.flows import models as flows  # noqa: F401
from patchbay.core.identity import models as identity  # noqa: F401
from patchbay.core.integrations import models as integrations  # noqa: F401
from patchbay.core.jobs import models as jobs  # noqa: F401
from patchbay.core.leads import models as leads  # noqa: F401
from patchbay.core.mcp import models as mcp  # noqa: F401
from patchbay.core.ratelimit import models as ratelimit  # noqa: F401
from patchbay.core.records import models as records  # noqa: F401
from patchbay.core.security import models as security  # noqa: F401
from patchbay.core.storage.base import Base
from patchbay.core.tables import models as tables  # noqa: F401
from patchbay.core.users import models as users  # noqa: F401
from patchbay.core.webhooks import models as webhooks  # noqa: F401
from patchbay.core.workspaces import audit as workspace_audit  # noqa: F401
from patchbay.core.workspaces import models as workspaces  # noqa: F401

metadata = Base.metadata
