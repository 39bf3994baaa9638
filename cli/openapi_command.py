"""``patchbay openapi``: the OpenAPI document of the API, written without a server or a database
(what ``GET /openapi.json`` answers); the SDKs are generated from it (``sdks/generate``)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from patchbay.cli.runtime import plugin_failure, settings_from


@click.command("openapi")
@click.option("--base-url", help="Public URL of the service, the document's server [the configured base URL].")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the document to this file instead of standard output.")
def openapi(base_url: str | None, output: Path | None) -> None:
    """Print the OpenAPI 3.1 document of the API (the installed plugins' routes included), as
    `GET /openapi.json` answers it, without starting a server or opening a database."""
    from patchbay.core.app import create_app
    from patchbay.core.http.openapi import build_document
    from patchbay.core.plugins.registry import PluginError

    settings = settings_from({"base_url": base_url})
    with tempfile.TemporaryDirectory() as scratch:
        # nothing is opened or written: a scratch folder stands in for the data folder, whose
        # generated secret the document does not need
        settings = settings.model_copy(update={"data_dir": Path(scratch), "database_url": None, "secret_key": settings.secret_key or ["openapi"]})
        try:
            app = create_app(settings, background=False, migrate=False)
        except PluginError as error:
            raise plugin_failure(error) from None
        text = json.dumps(build_document(app), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
