"""The standard pack acceptance suite over every provider a ``providers/*/actions.toml`` declares
(``also`` providers included), generated from the files: a new file is covered without an edit
here. Each class runs every declared action, poll trigger and webhook trigger against a fake of the
provider's API (``patchbay.testing.declared``)."""

from __future__ import annotations

from importlib.resources import files

from patchbay.core.declared.loader import FILE_NAME, load_file
from patchbay.testing import pack_acceptance


def _suites() -> dict[str, type]:
    """One acceptance class per declared provider. A folder with code is a pack installed under the
    folder's name; a file alone in its folder adds to a data-only provider, whose pack is named
    like the provider."""
    suites = {}
    for folder in files("patchbay.providers").iterdir():
        if not (folder / FILE_NAME).is_file():
            continue
        for provider in load_file(folder / FILE_NAME).providers:
            pack = folder.name if (folder / "__init__.py").is_file() else provider
            suites["TestPackSuite_" + provider.replace("-", "_")] = pack_acceptance(provider, pack=pack)
    return suites


SUITES = _suites()
globals().update(SUITES)


def test_every_declared_provider_has_a_suite():
    from patchbay.core.declared.loader import declarations

    assert {name.removeprefix("TestPackSuite_") for name in SUITES} == {p.replace("-", "_") for d in declarations() for p in d.providers}
