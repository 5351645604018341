"""The sans-IO layers must not reach for sockets, selectors, threads or queues, and
no import runs up a layer (protocol <- capture <- network <- server <- daemon/cli;
spark_jobs imports only protocol and capture: see LAYERS below for every module).

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

The direction check reads every module of kafka_net and spark_jobs with
:mod:`ast` as well (relative and lazy imports included) and fails on an import
of a higher layer, or of a module no layer was decided for.
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


def _dynamic_import(call: ast.Call) -> list[str]:
    """``[name]`` for ``__import__("name")`` or ``importlib.import_module("name")``."""
    func = call.func
    fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if (fname in ("__import__", "import_module") and call.args
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
        return [call.args[0].value]
    return []


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
            names = _dynamic_import(node)
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


def modules_imported_by(setup: str, statement: str) -> tuple[list[str], object]:
    """In a fresh isolated interpreter: the modules that running ``statement``
    (after ``setup``) imports, and the value it leaves in ``result``."""
    code = (
        "import sys, json\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"{setup}\n"
        "before = set(sys.modules)\n"
        "result = None\n"
        f"{statement}\n"
        "print(json.dumps([sorted(set(sys.modules) - before), result]))\n"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", code],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_no_io_roots(new_modules: list[str]) -> None:
    roots = {name.split(".")[0] for name in new_modules}
    assert roots & FORBIDDEN == set(), sorted(roots & FORBIDDEN)


def test_importing_protocol_pulls_in_no_io_modules():
    new_modules, _ = modules_imported_by("", "import kafka_net.protocol")
    assert "kafka_net.protocol.codec" in new_modules  # the import really happened
    assert_no_io_roots(new_modules)


# -- import direction between kafka_net's own packages ----------------------------------
#
# A module may import modules of its own layer or of a lower one, never of a
# higher one.  Lazy imports inside functions count too.  The layers, lowest first:
#
# protocol      the sans-IO codec; imports nothing of kafka_net above it.
# capture       sans-IO capture files and pairing; imports protocol.
# helpers       modules over protocol that no lower layer needs:
#               config (keys, defaults, validation and Kafka's key names) and
#               log_safety import nothing of kafka_net but each other, and are
#               imported from network up (log_safety imports threading, so it
#               must stay above the sans-IO layers); metrics imports protocol and
#               is imported by server and daemon; rate (Kafka's sampled Rate,
#               for connection and client quotas) imports nothing of kafka_net;
#               testing (Hypothesis strategies for users' tests) imports protocol only.
# network       SocketServer, Acceptor, Processor, Selector, RequestChannel.
# server        KafkaApis, the handlers, the managers, KafkaServer.
# assembly      embedded (the in-process Broker) and daemon (the process): they
#               build and run a KafkaServer.
# spark jobs    spark_jobs, a program of its own: it imports only protocol and
#               capture (checked on its own below), and only an entry point
#               (cli) may start it.
# entry points  the kafka_net package itself (a lazy facade over server,
#               embedded and config), cli, __main__ and pytest_plugin; top and
#               dump_log, the tools cli runs.

LAYERS: list[tuple[str, set[str]]] = [
    ("protocol", {"protocol"}),
    ("capture", {"capture"}),
    ("helpers", {"config", "log_safety", "metrics", "rate", "security",
                 "testing", "collector"}),
    ("network", {"network"}),
    ("server", {"server"}),
    ("assembly", {"embedded", "daemon"}),
    ("spark jobs", {"spark_jobs"}),
    ("entry points", {"kafka_net", "cli", "__main__", "entry", "pytest_plugin", "top",
                      "dump_log"}),
]
RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}
SPARK_JOBS_MAY_IMPORT = {"protocol", "capture"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str | None:
    """The layering unit of a module of ours (kafka_net's subpackage or top-level
    module, or spark_jobs); None for anything else."""
    parts = module.split(".")
    if parts[0] == "spark_jobs":
        return "spark_jobs"
    if parts[0] != "kafka_net":
        return None
    return parts[1] if len(parts) > 1 else "kafka_net"


def _from_import(base: str, name: str) -> str:
    """``from base import name``: the module ``base.name`` if there is one, else ``base``."""
    path = ROOT.joinpath(*base.split("."), name)
    return f"{base}.{name}" if path.is_dir() or path.with_suffix(".py").is_file() else base


def own_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) for every import of one of our modules in ``source``, the
    source of ``module``; relative imports resolved, ``from a import b`` read as
    ``a.b`` where b is a module."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names = [_from_import(base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Call):
            names = _dynamic_import(node)
        found += [(node.lineno, name) for name in names if unit_of(name) is not None]
    return found


def layering_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    here = unit_of(module)
    if here not in RANK:
        return [f"{module}: no layer for '{here}': add it to LAYERS"]
    bad = []
    for line, name in own_imports(source, module, is_package):
        there = unit_of(name)
        if there == here:
            continue
        if there not in RANK:
            bad.append(f"line {line}: {name}: no layer for '{there}': add it to LAYERS")
        elif here == "spark_jobs" and there not in SPARK_JOBS_MAY_IMPORT:
            bad.append(f"line {line}: spark_jobs imports {name}: only "
                       f"{sorted(SPARK_JOBS_MAY_IMPORT)} are allowed")
        elif RANK[there] > RANK[here]:
            bad.append(f"line {line}: {name} ({LAYERS[RANK[there]][0]}) is above "
                       f"{module} ({LAYERS[RANK[here]][0]})")
    return bad


def _our_files() -> list[Path]:
    return sorted([*(ROOT / "kafka_net").rglob("*.py"), *(ROOT / "spark_jobs").rglob("*.py")])


@pytest.mark.parametrize("path", _our_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_runs_up_a_layer(path: Path):
    assert layering_violations(path.read_text(encoding="utf-8"), module_name(path),
                               path.name == "__init__.py") == []


def test_every_unit_has_a_layer():
    units = {unit_of(module_name(p)) for p in _our_files()}
    assert {"protocol", "capture", "network", "server", "spark_jobs"} <= units
    assert units - set(RANK) == set()


@pytest.mark.parametrize("module,source", [
    ("kafka_net.protocol.codec", "from kafka_net.capture import format"),
    ("kafka_net.protocol.codec", "import kafka_net.network.selector"),
    ("kafka_net.capture.pcap", "from kafka_net.network import processor"),
    ("kafka_net.capture.pcap", "from kafka_net import config"),   # a module, via from
    ("kafka_net.network.processor", "from ..server import apis"),  # relative
    ("kafka_net.network.processor", "def f():\n    from kafka_net.server.apis import X"),
    ("kafka_net.server.apis", "from kafka_net.daemon import run"),
    ("kafka_net.server.apis", "importlib.import_module('kafka_net.cli')"),
    ("kafka_net.config", "from kafka_net.network.acceptor import Acceptor"),
    ("kafka_net.config.broker_keys", "from kafka_net.server import apis"),  # a submodule
    ("kafka_net.daemon", "from kafka_net import cli"),
    ("kafka_net.network.processor", "import spark_jobs.conformance"),
    ("spark_jobs.report", "from kafka_net.config import ServerConfig"),
    ("spark_jobs.report", "from kafka_net.server import apis"),
    ("kafka_net.server.apis", "from kafka_net.newthing import x"),  # no layer yet
])
def test_layering_checker_catches_an_upward_import(module, source):
    assert layering_violations(source, module) != []


@pytest.mark.parametrize("module,source", [
    ("kafka_net.capture.pcap", "from kafka_net.protocol import framing"),
    ("kafka_net.network.processor", "from kafka_net.protocol.framing import FrameDecoder"),
    ("kafka_net.network.processor", "from .selector import Selector"),   # same unit
    ("kafka_net.server.apis", "from ..network.request_channel import Request"),
    ("kafka_net.server.apis", "from kafka_net.config import ServerConfig"),
    ("kafka_net.config.broker_keys",
     "from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS"),
    ("kafka_net.cli", "from kafka_net import __version__"),
    ("kafka_net.cli", "from kafka_net.spark_jobs import conformance"),
    ("spark_jobs.report", "from kafka_net.capture.pairing import pair"),
    ("kafka_net.server.apis", "import socket"),                 # not ours: sans-IO's job
])
def test_layering_checker_allows_a_downward_import(module, source):
    assert layering_violations(source, module) == []


def test_relative_imports_in_a_package_init_resolve_from_the_package():
    assert own_imports("from . import codec", "kafka_net.protocol", is_package=True) == [
        (1, "kafka_net.protocol.codec")]
    assert own_imports("from .codec import x", "kafka_net.protocol.framing") == [
        (1, "kafka_net.protocol.codec")]
    assert own_imports("from .. import config", "kafka_net.network.processor") == [
        (1, "kafka_net.config")]


def test_checking_a_crc_pulls_in_no_io_modules_and_uses_the_c_function():
    """The CRC32C function is loaded from the crc32c package's extension alone
    (framing._load_crc32c): its __init__ would import importlib.metadata and with
    it socket, threading and selectors."""
    new_modules, (value, kind) = modules_imported_by(
        "from kafka_net.protocol.records import framing",
        "result = [framing._crc32c(memoryview(b'123456789')),\n"
        "          type(framing._crc32c_function).__name__]")
    assert value == 0xE3069283                      # CRC-32C's check value
    assert kind == "builtin_function_or_method"     # the C function, not Python
    assert_no_io_roots(new_modules)
    assert "importlib.metadata" not in new_modules
