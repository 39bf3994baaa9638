"""Maps the top-level folders into the one ``patchbay`` import namespace.

``core/`` installs as ``patchbay.core``, ``plugins/`` as ``patchbay.plugins`` and so on; setuptools'
``package_dir`` does this for regular and editable installs alike. Every file of a package folder
that is not itself a package (templates, provider data, Alembic's migration scripts) ships as that
package's data. The entry points are computed here too: one per built-in provider, generated from
the catalog data and the provider packs by ``providers/catalog/entry_points.py`` (pyproject.toml
declares ``dynamic = ["entry-points", "scripts"]``: setuptools drops dynamic entry points beside
static scripts). Everything else lives in pyproject.toml.
"""

import importlib.util
from pathlib import Path

from setuptools import find_packages, setup

TOP_LEVEL_FOLDERS = ("core", "plugins", "providers", "cli")
SKIPPED = {"__pycache__", "node_modules"}


def data_files_of(package_folder: Path) -> list[str]:
    """Files under ``package_folder`` that no subpackage owns, relative to it."""
    found = []
    for path in package_folder.rglob("*"):
        relative = path.relative_to(package_folder)
        if not path.is_file() or SKIPPED & set(relative.parts) or path.suffix in (".pyc", ".pyo"):
            continue
        owners = [package_folder.joinpath(*relative.parts[:depth]) for depth in range(1, len(relative.parts))]
        if any((owner / "__init__.py").exists() for owner in owners):
            continue  # a subpackage ships it
        if len(relative.parts) == 1 and path.suffix == ".py":
            continue  # the package's own modules
        found.append(relative.as_posix())
    return found


package_dir = {"patchbay": "patchbay"}
packages = ["patchbay", *(f"patchbay.{sub}" for sub in find_packages(where="patchbay"))]
package_data: dict[str, list[str]] = {}
for folder in TOP_LEVEL_FOLDERS:
    for sub in ["", *find_packages(where=folder)]:
        name = f"patchbay.{folder}" + (f".{sub}" if sub else "")
        source = Path(folder, *sub.split(".")) if sub else Path(folder)
        package_dir[name] = source.as_posix()
        packages.append(name)
        package_data[name] = data_files_of(source)


def provider_entry_points() -> list[str]:
    """Loaded by path: importing ``providers`` as a package would need patchbay's dependencies."""
    spec = importlib.util.spec_from_file_location("entry_points", Path("providers", "catalog", "entry_points.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.provider_entry_points(Path("providers"))


entry_points = {
    "console_scripts": ["patchbay = patchbay.cli.main:cli"],
    "patchbay.providers": provider_entry_points(),
    "patchbay.plugins": [
        "alert_channels = patchbay.plugins.alert_channels",
        "crm_destinations = patchbay.plugins.crm_destinations",
        "declared = patchbay.core.declared.plugin",
        "federation = patchbay.plugins.federation",
        "stripe_billing = patchbay.plugins.stripe",
    ],
    "pytest11": ["patchbay = patchbay.testing.plugin"],
}

setup(package_dir=package_dir, packages=packages, package_data=package_data, entry_points=entry_points)
