"""Running patchbay from another source tree beside this one, for the benchmarks' ``--baseline-tree``
(before/after comparisons in the same rounds: ``git archive <commit> | tar -x -C DIR``)."""

from __future__ import annotations

import shutil
from pathlib import Path


def package_folder(tree: Path, folder: Path) -> Path:
    """A folder to put first on ``sys.path`` so that ``import patchbay`` loads the source ``tree``
    (laid out as this repository: ``patchbay/``, ``core/``, ``cli/``, ``plugins/``, ``providers/``)."""
    package = folder / "patchbay"
    shutil.copytree(tree / "patchbay", package)
    for name in ("cli", "core", "plugins", "providers"):
        (package / name).symlink_to((tree / name).resolve(), target_is_directory=True)
    return folder
