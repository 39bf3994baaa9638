"""Copy the brand icons of the catalog's providers from the ``simple-icons`` npm package into
``logos/<provider>.svg``, the folder the logo route serves them from.

Usage (from the repository root)::

    npm pack simple-icons && tar xzf simple-icons-*.tgz     # a folder named package/
    python providers/catalog/vendor_logos.py --package package [--dry-run]

A provider gets the icon whose title is its display name (without a parenthesis: "Stripe (API
Key)" is Stripe), or the one ``SLUGS`` names for it; ``NO_ICON`` leaves out a provider whose name
matches an unrelated brand. Only icons whose licence allows copying are taken: the package's own
CC0-1.0 (every icon without a licence of its own) and the permissive licences in ``LICENCES``;
an icon under another licence (attribution, share-alike, non-commercial, custom) is left out, as
are the providers no icon matches: the monogram stands in for them. Each SVG is written in the
brand's colour (the package's ``hex``), its ``<title>`` the provider's display name, and the
folder's old icons are removed first so a rename leaves no stale file. ``logos/README.md`` records
the package's version and the licence.

This script is a development tool: nothing imports it at run time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
DEFINITIONS = HERE / "definitions"
LOGOS = HERE / "logos"

#: per-icon licences (the package's data) that allow copying without attribution or share-alike
LICENCES = {"CC0-1.0", "MIT", "Apache-2.0", "BSD-3-Clause", "Unlicense"}

#: provider name -> simple-icons slug, where the display name is not the icon's title
SLUGS = {
    "google": "google",
    "google-mail": "gmail",
    "google-sheet": "googlesheets",
    "google-drive": "googledrive",
    "google-calendar": "googlecalendar",
    "google-docs": "googledocs",
    "google-analytics": "googleanalytics",
    "google-ads": "googleads",
    "microsoft-teams": "microsoftteams",
    "outlook": "microsoftoutlook",
    "one-drive": "microsoftonedrive",
    "sharepoint-online": "microsoftsharepoint",
    "github-pat": "github",
    "gitlab-pat": "gitlab",
    "airtable-pat": "airtable",
    "shopify-api-key": "shopify",
    "hubspot": "hubspot",
    "zoom": "zoom",
    "facebook": "facebook",
    "instagram": "instagram",
    "linkedin": "linkedin",
    "twitter-v2": "x",
}
#: providers whose display name is another brand's icon title (Fathom AI is not Fathom Analytics,
#: Firefish the recruitment software not the Fediverse server)
NO_ICON = {"fathom", "fathom-oauth", "firefish"}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _providers() -> dict[str, str]:
    """Provider name -> display name, from the definition files."""
    found = {}
    for path in sorted(DEFINITIONS.glob("*.toml")):
        definition = tomllib.loads(path.read_text(encoding="utf-8"))
        found[definition["name"]] = definition["display_name"]
    return found


def choose(providers: dict[str, str], icons: list[dict]) -> dict[str, dict]:
    """Provider name -> the icon's data, for each provider an allowed icon matches."""
    allowed = [icon for icon in icons if icon.get("license", {}).get("type", "CC0-1.0") in LICENCES]
    by_slug = {icon["slug"]: icon for icon in allowed}
    by_title = {_norm(icon["title"]): icon for icon in allowed}
    chosen = {}
    for name, display in providers.items():
        if name in NO_ICON:
            continue
        icon = by_slug.get(SLUGS[name]) if name in SLUGS else by_title.get(_norm(re.sub(r"\s*\(.*?\)", "", display)))
        if icon is not None:
            chosen[name] = icon
    return chosen


def coloured(svg: str, icon: dict, display_name: str) -> str:
    """The icon's SVG in the brand's colour, titled with the provider's display name."""
    svg = re.sub(r"<title>.*?</title>", f"<title>{escape(display_name)}</title>", svg, count=1, flags=re.S)
    return svg.replace("<svg ", f'<svg fill="#{icon["hex"]}" ', 1)


README = """# Provider logos

Brand icons of the catalog's providers, `<provider>.svg`, served by
`GET /connect/v1/providers/<provider>/logo.svg` and shown by the Connect UI and the console; a
provider without a file here is drawn as a monogram.

They are copied from the [simple-icons](https://simpleicons.org) npm package, version {version},
by `providers/catalog/vendor_logos.py` (its docstring says how to run it). The package is released
under CC0-1.0 (public domain dedication); only icons without a licence of their own (so CC0-1.0) or
under {licences} are copied. Each file is the package's path in the brand's colour (the
package's `hex`) with the provider's display name as its title.

The icons are trademarks of their owners: simple-icons' DISCLAIMER.md asks users to follow each
brand's guidelines. They are used here only to name the provider an end user connects.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", type=Path, required=True, help="the unpacked simple-icons npm package (its folder 'package')")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    icons = json.loads((args.package / "data" / "simple-icons.json").read_text(encoding="utf-8"))
    version = json.loads((args.package / "package.json").read_text(encoding="utf-8"))["version"]
    providers = _providers()
    chosen = choose(providers, icons)
    files = {
        name: coloured((args.package / "icons" / f"{icon['slug']}.svg").read_text(encoding="utf-8"), icon, providers[name]) for name, icon in chosen.items()
    }
    size = sum(len(text.encode()) for text in files.values())
    print(f"{len(files)} of {len(providers)} providers have an icon ({size // 1024} KiB)")
    if args.dry_run:
        for name, icon in sorted(chosen.items()):
            print(f"  {name}: {icon['slug']} ({icon['title']})")
        return 0
    LOGOS.mkdir(exist_ok=True)
    for old in LOGOS.glob("*.svg"):
        old.unlink()
    for name, text in files.items():
        (LOGOS / f"{name}.svg").write_text(text, encoding="utf-8")
    (LOGOS / "README.md").write_text(README.format(version=version, licences=", ".join(sorted(LICENCES))), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
