"""Write ``docs/reference/api.md``, the API reference, from the OpenAPI document that
``/openapi.json`` answers, built here without a server or a database:

    python docs/reference/generate.py           # rewrite docs/reference/api.md
    python docs/reference/generate.py --check   # exit 1 when the committed file is not current

The document comes from the installed plugins, so generate it from a plain ``pip install .`` of
the clone (a pack installed beside it would add its routes)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

TARGET = Path(__file__).with_name("api.md")
#: settings that make the document the same on every machine (the server URL is the default one)
ENVIRONMENT = {
    "PATCHBAY_SECRET_KEY": "reference-generator-" + "x" * 24,
    "PATCHBAY_SCHEDULER": "false",
    "PATCHBAY_HOST": "127.0.0.1",
    "PATCHBAY_PORT": "8080",
}


def document() -> dict:
    from patchbay.core.app import create_app
    from patchbay.core.http.openapi import build_document
    from patchbay.core.settings import load_settings

    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings({}, ENVIRONMENT | {"PATCHBAY_DATA_DIR": data_dir})
        return build_document(create_app(settings, background=False, migrate=False))


def render() -> str:
    from patchbay.core.http.api_docs import markdown

    return markdown(document())


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is not current: run python docs/reference/generate.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
