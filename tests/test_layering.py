"""The sans-IO layers must not reach for sockets, selectors, threads or queues.

``kafka_net.protocol`` (and ``kafka_net.capture`` when it exists) is shared by
the Processor threads, the tests and the Spark jobs; it only works everywhere
because it does no I/O.  Two checks:

* the primary one reads every module's source with :mod:`ast` and fails on any
  ``import socket`` / ``from socket import ...`` (also ``socket.x``,
  ``__import__("socket")`` and ``importlib.import_module("socket")``);
* a secondary one imports the package in a fresh ``python -I`` and fails if
  any forbidden module shows up among the modules that import pulled in.
  Some interpreters import ``threading`` at startup already, which is why
  the AST check is the one that cannot be fooled.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SANS_IO_PACKAGES = ["kafka_net/protocol", "kafka_net/capture"]
FORBIDDEN = {"socket", "selectors", "threading", "queue", "asyncio"}


def _sans_io_files() -> list[Path]:
    files: list[Path] = []
    for rel in SANS_IO_PACKAGES:
        pkg = ROOT / rel
        if pkg.is_dir():
            files.extend(sorted(pkg.rglob("*.py")))
    return files


def forbidden_imports(source: str, filename: str = "<string>") -> list[str]:
    """Return ``"line N: module"`` for every forbidden import in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call):
            func = node.func
            fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if (fname in ("__import__", "import_module") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in FORBIDDEN:
                found.append(f"line {node.lineno}: {name}")
    return found


def test_there_is_something_to_check():
    files = _sans_io_files()
    names = {f.name for f in files}
    assert {"framing.py", "codec.py", "primitives.py", "schema.py"} <= names


@pytest.mark.parametrize(
    "path", _sans_io_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_sans_io_module_imports_no_io(path: Path):
    assert forbidden_imports(path.read_text(encoding="utf-8"), str(path)) == []


@pytest.mark.parametrize("source", [
    "import socket",
    "import os, selectors",
    "import threading as t",
    "from queue import Queue",
    "from asyncio.events import get_event_loop",
    "import socket.foo",
    "def f():\n    import threading",
    "__import__('socket')",
    "importlib.import_module('queue')",
])
def test_checker_catches_forbidden_import(source):
    # The checker itself must be able to fail, or the test above proves nothing.
    assert forbidden_imports(source) != []


@pytest.mark.parametrize("source", [
    "import struct",
    "from kafka_net.protocol import socket_helpers",  # a name, not the module
    "from . import queue",                            # relative: our own module
    "import sockets",
])
def test_checker_allows_other_imports(source):
    assert forbidden_imports(source) == []


def test_importing_protocol_pulls_in_no_io_modules():
    code = (
        "import sys, json\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "before = set(sys.modules)\n"
        "import kafka_net.protocol\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", code],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    new_modules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "kafka_net.protocol.codec" in new_modules  # the import really happened
    roots = {name.split(".")[0] for name in new_modules}
    assert roots & FORBIDDEN == set(), sorted(roots & FORBIDDEN)
