"""Maps the top-level folders into the one ``patchbay`` import namespace.

``core/`` installs as ``patchbay.core``, ``plugins/`` as ``patchbay.plugins`` and so on; setuptools'
``package_dir`` does this for regular and editable installs alike. Everything else lives in
pyproject.toml.
"""

from setuptools import find_packages, setup

TOP_LEVEL_FOLDERS = ("core", "plugins", "providers", "cli")

package_dir = {"patchbay": "patchbay"}
packages = ["patchbay"]
for folder in TOP_LEVEL_FOLDERS:
    package_dir[f"patchbay.{folder}"] = folder
    packages.append(f"patchbay.{folder}")
    for sub in find_packages(where=folder):
        packages.append(f"patchbay.{folder}.{sub}")

setup(package_dir=package_dir, packages=packages)
