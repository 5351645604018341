"""No import circle inside kafka_net.protocol: its modules import each other in layers.

A circle makes a reader hold every module of it in mind at once, and makes the
order in which Python runs them matter.  The schema, the code generator and the
message modules used to form one (a Schema compiled its codecs with codegen,
codegen imported the schema types and, for its command line, the messages);
now the parts a schema is made of (``fields``) sit below the generator, the
Schema above it, and the command line (``generated``) above the messages.

Imports are read with :mod:`ast` by ``tests/test_layering.py``'s reader, lazy
ones inside functions included.  ``from kafka_net.protocol import ApiKey`` is an
arrow to the package's ``__init__``; the package a module sits in is not
counted on its own (a package's ``__init__`` that gathers its modules' names,
as kafka_net.protocol's does, would otherwise be in a circle with each of them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import circles
from tests.test_layering import ROOT, module_name, own_imports

PROTOCOL = ROOT / "kafka_net" / "protocol"


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports; ``sources`` maps a module
    name to (its source, whether it is a package's ``__init__``)."""
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        targets = {name for _, name in own_imports(source, module, is_package)}
        graph[module] = {_known(name, sources) for name in targets} - {None, module}
    return graph


def _known(name: str, sources: dict) -> str | None:
    """``name``, or the nearest package above it, among ``sources``."""
    while name and name not in sources:
        name = name.rpartition(".")[0]
    return name or None


def _protocol_sources() -> dict[str, tuple[str, bool]]:
    files: list[Path] = sorted(PROTOCOL.rglob("*.py"))
    return {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in files}


def test_protocol_modules_import_each_other_in_layers():
    sources = _protocol_sources()
    assert "kafka_net.protocol.schema" in sources and len(sources) > 20
    assert circles(import_graph(sources)) == []


# The checker on made-up sources under real module names (the reader keeps only
# kafka_net's modules, and tells a module from a name by the files that exist).
P = "kafka_net.protocol"


@pytest.mark.parametrize("sources, circle", [
    ({f"{P}.schema": (f"from {P} import codegen", False),
      f"{P}.codegen": (f"import {P}.schema", False)},
     [f"{P}.codegen", f"{P}.schema"]),
    # lazy, inside a function: still an arrow
    ({f"{P}.schema": (f"def f():\n    from {P}.codegen import x", False),
      f"{P}.codegen": (f"from {P}.messages import y", False),
      f"{P}.messages": (f"from {P}.schema import z", True)},
     [f"{P}.codegen", f"{P}.messages", f"{P}.schema"]),
    # through a package's __init__, by a name it exports
    ({P: (f"from {P}.codec import x", True), f"{P}.codec": (f"from {P} import ApiKey", False)},
     [P, f"{P}.codec"]),
])
def test_the_checker_finds_a_circle(sources, circle):
    assert circles(import_graph(sources)) == [circle]


def test_the_checker_passes_layers():
    sources = {f"{P}.schema": (f"from {P} import codegen", False),
               f"{P}.codegen": (f"from {P}.fields import y", False),
               f"{P}.fields": ("import json", False)}
    assert circles(import_graph(sources)) == []
