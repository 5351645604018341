"""The group package is built by composition: no mixin, no import circle.

Each group KIP (848, 1071, 932) added a coordinator to server/group; while the
parts were mixins of their host classes and the modules imported each other
in a circle, each new one widened both.  Two rules, read from the source
with :mod:`ast` (nothing is imported):

* **no import circle** among the modules of server/group, counting every
  import (lazy ones inside functions and ``TYPE_CHECKING`` ones too: a circle
  a type checker must walk is still a circle for a reader);
* **no mixin**: a class has one base at most (an ``Exception`` or ``Enum``
  pair aside), and every ``self.NAME`` a class of server/group reads is
  defined by the class or by its bases in server/group (a method, a class
  attribute or field, or an attribute some method assigns).  A mixin is
  exactly a class that reads names only its host defines.  A class with a
  base from outside the package (``DelayedOperation``, ``Exception``) is
  exempt from the second rule: its base's names cannot be read here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import circles

ROOT = Path(__file__).resolve().parents[3]
GROUP = ROOT / "kafka_net" / "server" / "group"
PACKAGE = "kafka_net.server.group"
# Bases that may sit beside another one (an error code enum, say).
MULTI_BASE_OK = {"Exception", "Enum", "IntEnum", "str", "int"}


def _imports(path: Path) -> set[str]:
    """The server/group modules ``path`` imports, by module name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
            elif node.module == PACKAGE:
                names = [a.name for a in node.names]
            elif node.module and node.module.startswith(PACKAGE + "."):
                names = [node.module[len(PACKAGE) + 1:]]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name[len(PACKAGE) + 1:] for a in node.names
                     if a.name.startswith(PACKAGE + ".")]
        else:
            continue
        found.update(n.split(".")[0] for n in names if n)
    return found


def import_graph(folder: Path) -> dict[str, set[str]]:
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    return {m: _imports(folder / f"{m}.py") & modules - {m} for m in sorted(modules)}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "?")


def _defined(cls: ast.ClassDef) -> set[str]:
    """The names a class itself defines: methods, class attributes and fields,
    and every ``self.NAME = ...`` in its methods."""
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "self"):
            names.add(node.attr)
    return names


def _read(cls: ast.ClassDef) -> set[str]:
    """The ``self.NAME`` a class reads; dunders (``__dataclass_fields__``, ...) are the
    object model's, not a host's."""
    return {node.attr for node in ast.walk(cls)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name) and node.value.id == "self"
            and not node.attr.startswith("__")}


def mixins(sources: dict[str, str]) -> list[str]:
    """``module.Class: why`` for each class that breaks the no-mixin rule."""
    classes: dict[str, ast.ClassDef] = {}
    for module, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
    found = []
    for module, text in sorted(sources.items()):
        for cls in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)):
            bases = [_base_name(b) for b in cls.bases]
            if len(bases) > 1 and not set(bases) & MULTI_BASE_OK:
                found.append(f"{module}.{cls.name}: bases {', '.join(bases)}")
                continue
            defined, todo, outside = set(), [cls], False
            while todo:
                c = todo.pop()
                defined |= _defined(c)
                names = [_base_name(b) for b in c.bases]
                outside |= any(b not in classes for b in names)
                todo.extend(classes[b] for b in names if b in classes)
            if outside:
                continue   # a base from elsewhere: its names are not read here
            missing = sorted(_read(cls) - defined)
            if missing:
                found.append(f"{module}.{cls.name}: reads self.{', self.'.join(missing)} "
                             "that only a host class defines")
    return found


def _group_sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(GROUP.glob("*.py"))}


def test_no_import_circle_among_the_group_modules():
    assert circles(import_graph(GROUP)) == []


def test_no_mixin_class_in_the_group_package():
    assert mixins(_group_sources()) == []


def test_the_rules_see_a_circle_and_a_mixin(tmp_path):
    """The checks above could fail: a two-module circle and a mixin are found."""
    (tmp_path / "a.py").write_text(f"from {PACKAGE}.b import B\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        f"if TYPE_CHECKING:\n    from {PACKAGE} import a\n")
    (tmp_path / "c.py").write_text(f"from {PACKAGE}.a import x\n")
    assert circles(import_graph(tmp_path)) == [["a", "b"]]
    host = ("class Part:\n    def go(self):\n        return self._host_only()\n\n"
            "class Host(Part):\n    def _host_only(self):\n        return 1\n")
    two = "class Part:\n    pass\n\nclass Other:\n    pass\n\nclass Host(Part, Other):\n    pass\n"
    whole = ("class Part:\n    def __init__(self, host):\n        self._host = host\n\n"
             "    def go(self):\n        return self._host.run()\n")
    assert mixins({"m": host}) == [
        "m.Part: reads self._host_only that only a host class defines"]
    assert mixins({"m": two}) == ["m.Host: bases Part, Other"]
    assert mixins({"m": whole}) == []
