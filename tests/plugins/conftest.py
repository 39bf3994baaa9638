"""Fixtures of the plugin tests.

Installed packs are real distributions: a ``*.dist-info`` folder with ``entry_points.txt`` on
``sys.path`` is what ``importlib.metadata`` finds for a pip-installed pack."""

import importlib
import textwrap

import pytest


@pytest.fixture
def install(tmp_path, monkeypatch):
    """``install(distribution, {group: {entry_point: module}}, modules={name: source})`` puts a
    distribution on ``sys.path`` the way pip would."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def install(distribution: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str] | None = None) -> None:
        info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
        sections = [f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) for group, points in entry_points.items()]
        (info / "entry_points.txt").write_text("\n".join(sections))
        for module, source in (modules or {}).items():
            (site / f"{module}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()

    return install
