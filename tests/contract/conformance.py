"""What a conformance run is given: schemathesis.toml built from the parameters that name seeded
things (``conftest.conformance`` runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Operations:
    """An ``[[operations]]`` table of schemathesis.toml: the operations ``selector`` picks (a TOML
    line such as ``include-operation-id = "delete_delete_flow"``) get these path and query
    ``parameters`` (``{"path.id": ...}``) and ``headers``."""

    selector: str
    parameters: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)


def _inline(values: dict[str, str]) -> str:
    return "{ " + ", ".join(f'"{key}" = "{value}"' for key, value in values.items()) + " }"


def schemathesis_toml(parameters: dict[str, str], operations: list[Operations]) -> str:
    """schemathesis.toml giving every operation ``parameters`` (``"path.slug": "people"``), and
    the operations of each :class:`Operations` theirs."""
    text = "[parameters]\n" + "".join(f'"{key}" = "{value}"\n' for key, value in parameters.items())
    for chosen in operations:
        text += f"\n[[operations]]\n{chosen.selector}\nparameters = {_inline(chosen.parameters)}\n"
        if chosen.headers:
            text += f"headers = {_inline(chosen.headers)}\n"
    return text
