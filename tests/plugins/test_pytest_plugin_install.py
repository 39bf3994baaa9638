"""Installing patchbay never breaks an environment's pytest: its ``pytest11`` plugin loads with
patchbay's own dependencies and pytest alone (pytest-asyncio is only a test extra)."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh venv with patchbay's dependencies installed from the package mirror

REPOSITORY = Path(__file__).resolve().parents[2]
#: top-level entries of the checkout that are not part of the distribution (or are a build's leftovers)
NOT_SHIPPED = {".git", ".venv", ".ci", "build", "dist", "tests", "benchmarks", "docs", "patchbay-data"}


def _copy_of_checkout(target: Path) -> Path:
    """The checkout's sources, so that building them leaves no ``build/`` folder in the checkout."""

    def ignored(folder: str, names: list[str]) -> set[str]:
        top = set(names) & NOT_SHIPPED if Path(folder) == REPOSITORY else set()
        return top | {name for name in names if name in ("__pycache__", "node_modules") or name.endswith(".egg-info")}

    return Path(shutil.copytree(REPOSITORY, target, ignore=ignored))


@pytest.fixture(scope="module")
def plain_pytest_env(tmp_path_factory):
    """A fresh venv holding this checkout (not the test extra) and pytest alone; its ``bin`` folder."""
    root = tmp_path_factory.mktemp("plain-pytest")
    source = _copy_of_checkout(root / "patchbay")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    bin_folder = root / "venv" / "bin"
    # the machine's pip settings (index, mirror, find-links) apply to this pip as to any other
    installed = subprocess.run([bin_folder / "python", "-m", "pip", "install", "-q", str(source), "pytest"], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return bin_folder


def _run_pytest(bin_folder: Path, folder: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHON")) and key != "VIRTUAL_ENV"}
    env["PATH"] = f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([bin_folder / "pytest", "-q", "-p", "no:cacheprovider"], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_plain_pytest_passes_beside_patchbay(plain_pytest_env, tmp_path):
    (tmp_path / "test_trivial.py").write_text(
        textwrap.dedent(
            """\
            import importlib.util


            def test_patchbay_plugin_is_loaded_without_pytest_asyncio(pytestconfig):
                assert pytestconfig.pluginmanager.has_plugin("patchbay")
                assert importlib.util.find_spec("pytest_asyncio") is None
            """
        )
    )
    result = _run_pytest(plain_pytest_env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_fixture_needing_pytest_asyncio_says_so(plain_pytest_env, tmp_path):
    (tmp_path / "test_harness.py").write_text("def test_uses_the_harness(pack_harness):\n    pass\n")
    result = _run_pytest(plain_pytest_env, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "patchbay's fixture 'pack_harness' needs pytest-asyncio: pip install pytest-asyncio" in result.stdout
