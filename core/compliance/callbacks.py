"""The public side of provider data deletion callbacks (``register_deletion_callbacks``), kept
apart from the service so that ``patchbay`` can export it without loading the storage layer."""

from __future__ import annotations

from typing import Any

import attrs


class DeletionCallbackError(ValueError):
    """Raised by a data deletion callback's ``subject`` when the request does not verify (or the
    callback is not configured); answered 400 with the message."""


@attrs.frozen(kw_only=True)
class DeletionContext:
    """What a data deletion callback's ``subject(value, ctx)`` is handed."""

    #: the settings section named like the callback's source (``register_settings``), or None
    config: Any
    #: the core ``[compliance]`` section
    compliance: Any
