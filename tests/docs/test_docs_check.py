"""The docs check: in docs/**/*.md, README.md and benchmarks/README.md every relative link and
anchor resolves, the Python samples compile (and the ones that import patchbay import), the TOML
samples parse, and no page cites the project's internal notes (specification or contract sections,
issue numbers). The quickstart's shell samples run in test_docs_quickstart.py."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import tomllib
import unicodedata
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md", ROOT / "benchmarks" / "README.md"])
#: pages other sessions write at the same time; checked for links, not for wording
NOT_OURS = {"scaling.md", "deploy.md", "integrations.md", "sdks.md", "api-contract.md"}

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def _strip_code(text: str) -> str:
    """``text`` without fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1\s*$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+).+?\1", "", text, flags=re.S)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: its text without markup, lower case, spaces to dashes, and
    punctuation other than ``-`` and ``_`` dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = "".join(ch for ch in text.lower() if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_fence = False
    for line in path.read_text().splitlines():
        if re.match(r"^ {0,3}(`{3,}|~{3,})", line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        found.update(HTML_ID.findall(line))
        match = HEADING.match(line)
        if match:
            base = github_anchor(match[2])
            seen = counts.get(base, 0)
            counts[base] = seen + 1
            found.add(base if not seen else f"{base}-{seen}")
    return frozenset(found)


def test_pages_exist():
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    assert {"docs/index.md", "docs/quickstart.md", "docs/reference/api.md", "benchmarks/README.md", "README.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_links_resolve(page):
    broken = []
    for target in LINK.findall(_strip_code(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # http(s), mailto: not checked offline
        file_part, _, fragment = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def _samples(*languages: str):
    return [block for page in PAGES for block in blocks(page) if block.language in languages]


@pytest.mark.parametrize("block", _samples("python", "py"), ids=lambda block: f"{block.path.relative_to(ROOT)}:{block.line}")
def test_python_samples_compile(block):
    source = block.text
    try:
        compile(source, block.where(), "exec")
    except SyntaxError:
        # a fragment: statements with await at top level, as in an async function's body
        compile("async def _sample():\n" + "".join(f"    {line}\n" for line in source.splitlines()), block.where(), "exec")


def test_python_samples_imports_resolve():
    """Every ``import`` and ``from ... import`` of a patchbay module in a sample imports."""
    statements = set()
    for block in _samples("python", "py"):
        for line in block.text.splitlines():
            match = re.match(r"^\s*(from\s+patchbay(?:\.\w+)*\s+import\s+[\w, ()]+|import\s+patchbay(?:\.\w+)*)\s*$", line)
            if match:
                statements.add(match[1].replace("(", "").replace(")", "").rstrip(", "))
    assert statements, "the docs show how to import patchbay somewhere"
    for statement in sorted(statements):
        exec(statement, {})  # in this process: the test session has imported patchbay already


@pytest.mark.parametrize("block", _samples("toml"), ids=lambda block: f"{block.path.relative_to(ROOT)}:{block.line}")
def test_toml_samples_parse(block):
    tomllib.loads(block.text)


#: a word that carries one of the searched strings without being a citation
ALLOWED = re.compile(
    r"^(?:.*introspect.*|.*hookspecs?(?:\.py)?|hook|specific\w*|.*inspect\w*|respect\w*|aspect\w*|suspect\w*"
    r"|tests/contract.*|api-contract(?:\.md)?|specifications?|specs?)$",
    re.I,
)
CITATION = re.compile(r"\b(?:spec(?:ification)?|contract)\s+(?:section\s+|part\s+)?\d|\bspec\s+part\b|interface spec|issue\s+\d+|§", re.I)
#: a bare section number in parentheses, ``(4.21)``, ``(8A)`` (not in benchmarks/README.md, where
#: parentheses hold measured figures)
SECTION_NUMBER = re.compile(r"\((?:[1-9]\.\d{1,2}|\d[AB])(?:,\s*[\d.AB]+)*\)")


@pytest.mark.parametrize("page", [page for page in PAGES if page.name not in NOT_OURS], ids=lambda page: page.relative_to(ROOT).as_posix())
def test_no_internal_references(page):
    """No section of a specification or contract, issue number or section sign: a reader has none of
    them. ``spec``/``contract`` appear only inside words such as introspection, hookspecs.py or
    tests/contract."""
    text = page.read_text()
    citations = [match.group(0) for match in CITATION.finditer(text)]
    if page.parent.name != "benchmarks":
        citations += [match.group(0) for match in SECTION_NUMBER.finditer(text)]
    assert not citations, citations
    words = {word for word in re.findall(r"[\w./-]*(?:spec|contract)[\w./-]*", text, re.I) if not ALLOWED.match(word.strip("./-"))}
    assert not words, words


@pytest.mark.parametrize("block", _samples("json"), ids=lambda block: f"{block.path.relative_to(ROOT)}:{block.line}")
def test_json_samples_parse(block):
    json.loads(block.text)


@pytest.mark.parametrize("block", _samples("yaml", "yml"), ids=lambda block: f"{block.path.relative_to(ROOT)}:{block.line}")
def test_yaml_samples_parse(block):
    yaml = pytest.importorskip("yaml")
    yaml.safe_load(block.text)


def test_shell_samples_are_valid_shell():
    """Every ```bash / ```sh block parses (``bash -n``); the quickstart's also run
    (test_docs_quickstart.py)."""
    bad = []
    for block in _samples("bash", "sh", "shell"):
        result = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            bad.append(f"{block.where()}: {result.stderr.strip()}")
    assert not bad, bad


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_no_install_from_the_index_by_the_taken_name(page):
    """``patchbay`` on PyPI is an unrelated project: the docs install the clone (``pip install .``)."""
    assert not re.search(r"""pip install\s+(?:-\S+\s+)*["']?patchbay(?:\[|["'\s]|$)""", page.read_text(), re.M)
