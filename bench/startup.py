"""Group ``startup`` (issue 28): time to listen, kafka-net beside Tansu.

Time to listen: from just before the server process is started (fork and exec)
to the first moment a TCP connect to its port succeeds, polled every
millisecond.  Kafka binds its listeners only once it can answer, and so does
kafka-net, so this is the wait a test suite or a ``docker run`` sees before its
first request.  After each start one ApiVersions request checks that a broker
answers on that port; then the server is stopped with SIGTERM.

Servers, each started ``--starts`` times (default 10), the order rotated each
round so that drift in the machine's load hits them alike:

* kafka-net ``serve --dev`` (logs in memory);
* kafka-net ``serve`` on its defaults with ``log.dirs`` a new, empty folder
  (the durable log);
* ``kafka-net serve --dev`` as ``make run`` starts it: the console script
  beside the interpreter, which finds the package through the editable
  install, started from another folder;
* Tansu (the Rust broker, in-memory storage);
* with ``--startup-base REV`` also kafka-net at git revision REV (e.g. ``main``
  before a change), ``--dev`` and durable, exported with ``git archive`` and run
  by the same interpreter, so a change is measured at the same moment as what it
  is compared with.

Besides the wall time, the CPU time the server process had used when the connect
succeeded (``/proc/PID/stat``, clock ticks): on a shared machine it moves much
less with the load than the wall time does.  Python's bytecode cache is warm, as
after ``pip install``: each kafka-net is started once, untimed, first, with
``PYTHONDONTWRITEBYTECODE`` removed from the servers' environment.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness
from bench.measure import median
from bench.results import context_lines, num, table

GROUP = "startup"
TARGET_MS = 150.0
POLL_S = 0.001
READY_TIMEOUT_S = 30.0
API_VERSIONS = 18


@dataclass
class Subject:
    """One way of starting a server; ``argv(port, tmp)`` builds its command line."""
    name: str
    argv: object
    describe: str
    cwd: Path = harness.ROOT
    clean_exits: tuple[int, ...] = (0,)
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


def kafka_net(name: str, checkout: Path, durable: bool, label: str = "") -> Subject:
    def argv(port: int, tmp: Path) -> list[str]:
        base = [sys.executable, "-m", "kafka_net", "serve",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"]
        if not durable:
            return base + ["--dev"]
        log_dirs = Path(tmp) / f"log-dirs-{time.monotonic_ns()}"   # new and empty
        log_dirs.mkdir(parents=True)
        return base + ["--override", f"log.dirs={log_dirs}"]
    shown = ("`python -m kafka_net serve --override listeners=PLAINTEXT://127.0.0.1:PORT "
             + ("--override log.dirs=NEW_EMPTY_DIR`" if durable else "--dev`"))
    return Subject(name, argv, shown + label, cwd=checkout)


def console_script(name: str) -> Subject:
    """``kafka-net serve --dev`` by its console script, as a user of ``make run``
    starts it: kafka_net comes through the editable install (its path finder),
    not from the current folder as with ``python -m``."""
    script = Path(sys.executable).parent / "kafka-net"

    def argv(port: int, tmp: Path) -> list[str]:
        return [str(script), "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                "--dev"]
    return Subject(name, argv, "`kafka-net serve --override listeners=PLAINTEXT://127.0.0.1:"
                   "PORT --dev` (the console script, run from another folder)", cwd=Path("/"))


def tansu() -> Subject:
    binary = harness.tansu_binary()

    def argv(port: int, tmp: Path) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [str(binary), "broker", "--listener-url", url, "--advertised-listener-url",
                url, "--storage-engine", "memory://tansu/"]
    return Subject("Tansu", argv, "`tansu broker --listener-url tcp://127.0.0.1:PORT "
                   "--advertised-listener-url tcp://127.0.0.1:PORT "
                   "--storage-engine memory://tansu/`", clean_exits=(0, -signal.SIGTERM))


def export_revision(rev: str, into: Path) -> Path:
    """``git archive REV`` of this repository, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(harness.ROOT), "archive", rev],
                             capture_output=True, check=True, timeout=120).stdout
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def cpu_ms(pid: int) -> float:
    """User + system CPU time the process has used so far, in milliseconds."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def connects(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def start_once(subject: Subject, tmp: Path, env: dict, problems: list[str],
               record: bool = True) -> None:
    """Start the server, time it to listen, check it answers, stop it."""
    port = harness.free_port()
    argv = subject.argv(port, tmp)
    with open(tmp / f"{subject.name}.log", "ab") as log:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=subject.cwd, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        while not connects(port):
            if proc.poll() is not None or time.monotonic() - started > READY_TIMEOUT_S:
                raise RuntimeError(f"{subject.name} did not listen on {port} (exit "
                                   f"{proc.poll()}); its log: {tmp / subject.name}.log")
            time.sleep(POLL_S)
        wall = (time.monotonic() - started) * 1000
        cpu = cpu_ms(proc.pid)
        answer = harness.kafka_call(port, API_VERSIONS, 0, {})
        if answer["error_code"] != 0:
            problems.append(f"{subject.name}: ApiVersions answered {answer['error_code']}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(10)
    if code not in subject.clean_exits:
        problems.append(f"{subject.name} exited with {code}")
    if record:
        subject.wall_ms.append(wall)
        subject.cpu_ms.append(cpu)


def subjects(args, tmp: Path) -> list[Subject]:
    chosen = [kafka_net("kafka-net --dev", harness.ROOT, durable=False),
              kafka_net("kafka-net durable", harness.ROOT, durable=True)]
    if (Path(sys.executable).parent / "kafka-net").exists():
        chosen.append(console_script("kafka-net --dev, console script"))
    rev = getattr(args, "startup_base", None)
    if rev:
        base = export_revision(rev, tmp / "base")
        label = f" in `git archive {rev}`"
        chosen += [kafka_net(f"{rev}: kafka-net --dev", base, durable=False, label=label),
                   kafka_net(f"{rev}: kafka-net durable", base, durable=True, label=label)]
    return chosen + [tansu()]


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    tmp = tmp / GROUP
    tmp.mkdir(parents=True, exist_ok=True)
    compared = subjects(args, tmp)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for subject in compared:
        if subject.name != "Tansu":
            start_once(subject, tmp, env, problems, record=False)   # writes the bytecode
    for rnd in range(1, args.starts + 1):
        for subject in harness.round_order(compared, rnd):
            start_once(subject, tmp, env, problems)
        print(f"round {rnd}: " + ", ".join(f"{s.name} {s.wall_ms[-1]:.0f} ms"
                                           for s in compared), flush=True)
    context["load_end"] = os.getloadavg()[0]
    return render(compared, context, args.starts)


def render(compared: list[Subject], context: dict, starts: int) -> str:
    lines = ["## Start-up: time to listen, kafka-net beside Tansu", ""]
    lines += context_lines(context, [
        *(f"- {s.name}: {s.describe}" for s in compared),
        f"- Each server started {starts} times, the order rotated each round. Time to "
        "listen: from just before the process is started to the first TCP connect that "
        "succeeds (polled every 1 ms); then one ApiVersions request must be answered. "
        "CPU at listen: the server's user + system time by then (10 ms ticks). Bytecode "
        "cache warm (one untimed start of each kafka-net first)."])
    tansu_ms = next((median(s.wall_ms) for s in compared if s.name == "Tansu"), float("nan"))
    rows = [[s.name, f"**{num(median(s.wall_ms))}**", num(min(s.wall_ms)),
             num(max(s.wall_ms)), num(median(s.cpu_ms)),
             num(median(s.wall_ms) / tansu_ms, 1)] for s in compared]
    lines += table(["server", "time to listen, median ms", "min ms", "max ms",
                    "CPU at listen, median ms", "x Tansu"], rows, right={1, 2, 3, 4, 5})
    for s in compared:
        if s.name.startswith("kafka-net"):
            met = median(s.wall_ms) <= TARGET_MS
            lines.append(f"- {s.name}: median {num(median(s.wall_ms))} ms, target "
                         f"(<= {TARGET_MS:.0f} ms on an idle 2-core machine) "
                         f"{'met' if met else '**not met**'} in this run")
    lines += _against_base(compared)
    return "\n".join(lines) + "\n"


def _against_base(compared: list[Subject]) -> list[str]:
    """This checkout / the base revision, wall and CPU, for each kafka-net profile."""
    by_name = {s.name: s for s in compared}
    lines = []
    for s in compared:
        rev, _, profile = s.name.partition(": ")
        if profile and profile in by_name:
            this = by_name[profile]
            lines.append(f"- {profile}: this checkout / {rev}: time to listen "
                         f"{num(median(this.wall_ms) / median(s.wall_ms), 2)}, CPU at listen "
                         f"{num(median(this.cpu_ms) / median(s.cpu_ms), 2)}")
    return [""] + lines if lines else []
