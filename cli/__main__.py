"""``python -m patchbay.cli`` is the ``patchbay`` command."""

from patchbay.cli.main import cli

cli()
