"""What ``kafka-net serve`` imports before it listens (issue 28: time to listen).

Importing is most of a broker's start-up time, so what a start does not need is
imported where it is first used: an API's message schemas and its handler
module on its first request, the Prometheus client and HTTP server with a
metrics listener, the OTLP decoder on the first telemetry push, crc32c on the
first record batch, re2 on the first regex subscription, the capture writer
with capture.dir, PySpark never.  These tests run the real command line
(``kafka_net.cli.main``) in a fresh interpreter, read ``sys.modules`` once its
port accepts a connection, then stop it with SIGTERM.  They guard the structure,
never the time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import LOOPBACK

# Runs in the child: a helper thread waits for the listener, records the modules
# imported by then, and stops the broker as a user would (SIGTERM).
CHILD = r"""
import json, os, signal, socket, sys, threading, time
from kafka_net.cli import main

port, out, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def watch():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.01)
    with open(out, "w") as fh:
        json.dump(sorted(sys.modules), fh)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=watch, daemon=True).start()
sys.exit(main(argv))
"""

# Not needed to start a broker that has no metrics listener and no capture.dir.
NOT_AT_START = [
    "pyspark", "py4j",                                  # the conformance job
    "prometheus_client", "http.server", "kafka_net.server.metrics_http",
    "kafka_net.server.prometheus",                      # metrics.listener
    "re2",                                              # a regex subscription
    "crc32c", "importlib.metadata",                     # the first record batch
    "cramjam", "snappy", "lz4", "zstandard",            # a compressed batch
    "kafka_net.protocol.otlp",                          # a telemetry push
    "kafka_net.capture.writer",                         # capture.dir
    "kafka_net.network.ssl_factory", "ssl", "_ssl",     # an SSL listener
    "kafka_net.network.ssl_transport_layer",
    "kafka_net.spark_jobs", "rich", "kafka_net.top",    # other subcommands
    "ctypes.util",                                      # ran ldconfig to name threads
    "difflib",                                          # an unknown configuration key
    "kafka_net.server.faults.registry",                 # broker.faults, first used
    "kafka_net.server.share.coordinator",               # a share group's first request
    "kafka_net.server.share.persister", "kafka_net.protocol.share_records",
    "kafka_net.server.group.streams_coordinator",       # a streams group's first request
    "kafka_net.server.group.streams_group", "kafka_net.server.group.streams_assignor",
    "kafka_net.server.group.streams_group_records",
    "hashlib", "_hashlib", "hmac", "secrets",           # a SASL login (OpenSSL's libcrypto)
]


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def modules_at_listen(tmp_path, *args: str) -> set[str]:
    port = free_port()
    out = tmp_path / "modules.json"
    argv = [sys.executable, "-c", CHILD, str(port), str(out), "serve",
            "--override", f"listeners=PLAINTEXT://{LOOPBACK}:{port}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kafka-net started" in done.stderr
    return set(json.loads(out.read_text()))


@pytest.mark.parametrize("profile", ["dev", "durable"])
def test_serve_listens_without_importing_what_start_up_does_not_need(tmp_path, profile):
    args = ["--dev"] if profile == "dev" else ["--override", f"log.dirs={tmp_path / 'logs'}"]
    modules = modules_at_listen(tmp_path, *args)
    assert "kafka_net.server.kafka_server" in modules   # the broker did start
    assert sorted(m for m in NOT_AT_START if m in modules) == []
    # No API has been asked for yet: no schema module, no handler module.
    per_api = ("kafka_net.protocol.messages.", "kafka_net.server.handlers.")
    assert sorted(m for m in modules if m.startswith(per_api)) == []


def test_a_metrics_listener_imports_the_prometheus_client(tmp_path):
    # The other side of the lazy import: with metrics.listener the exposition is there.
    modules = modules_at_listen(tmp_path, "--dev", "--override",
                                f"metrics.listener=http://{LOOPBACK}:0")
    assert {"prometheus_client", "kafka_net.server.metrics_http"} <= modules


def _fresh_interpreter(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_message_schemas_are_imported_per_api_on_first_lookup():
    # MESSAGES knows every key without importing a schema; a lookup imports
    # that API's module, and only it.
    out = _fresh_interpreter(
        "import json, sys\n"
        "from kafka_net.protocol.api_keys import ApiKey\n"
        "from kafka_net.protocol import codec\n"
        "from kafka_net.protocol.messages import MESSAGES\n"
        "def schemas(): return sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                             if m.startswith('kafka_net.protocol.messages.'))\n"
        "before = schemas()\n"
        "keys = [int(k) for k in MESSAGES]\n"
        "known = (ApiKey.FETCH in MESSAGES, 9999 in MESSAGES, MESSAGES.get(9999), len(MESSAGES))\n"
        "after_keys = schemas()\n"
        "name = MESSAGES[ApiKey.LIST_OFFSETS].request.name\n"
        "print(json.dumps([before, keys, list(known), after_keys, name, schemas()]))\n")
    before, keys, known, after_keys, name, after_lookup = json.loads(out)
    from kafka_net.protocol.api_keys import ApiKey
    assert before == [] and after_keys == []
    assert keys == sorted(int(k) for k in ApiKey)
    assert known == [True, False, None, len(ApiKey)]
    assert name == "ListOffsetsRequest"
    assert after_lookup == ["list_offsets"]


def test_a_handler_module_is_imported_on_the_first_request_of_its_api():
    # The dispatch table knows every API's versions without importing a handler
    # (ApiVersions and the Processors need no more); a request imports its own.
    out = _fresh_interpreter(
        "import json, sys\n"
        "from kafka_net.protocol.api_keys import ApiKey\n"
        "from kafka_net.server.apis import HANDLERS, served_versions\n"
        "def handlers(): return sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                              if m.startswith('kafka_net.server.handlers.'))\n"
        "served = served_versions(HANDLERS, None)\n"
        "legacy = served_versions(HANDLERS, '3.9')\n"
        "before = handlers()\n"
        "handle = HANDLERS[ApiKey.HEARTBEAT].handle\n"
        "print(json.dumps([before, handlers(), handle.__module__, len(served), len(legacy)]))\n")
    before, after, where, served, legacy = json.loads(out)
    assert before == []
    assert after == ["heartbeat"]
    assert where == "kafka_net.server.handlers.heartbeat"
    assert served > 60 and legacy > 40


def _dataclasses_without_docstring(root) -> list[str]:
    import ast
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef) or ast.get_docstring(node) is not None:
                continue
            for decorator in node.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                if getattr(called, "id", getattr(called, "attr", None)) == "dataclass":
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def test_every_dataclass_says_what_it_is():
    # @dataclass gives a class without a docstring one made from
    # inspect.signature(cls): about half of what creating a dataclass costs, paid
    # by every import of its module (76 dataclasses are made before a broker
    # listens). A docstring saying what the class is costs nothing.
    from pathlib import Path
    package = Path(__file__).resolve().parent.parent / "kafka_net"
    assert _dataclasses_without_docstring(package) == []
