"""Every command the README and docs/ show runs, as shown, against a real broker.

The fence of a block says what it is:

- ```sh: commands, run with bash in the checkout, in page order.  A block whose one
  command starts a daemon (``make run``, ``kafka-net serve``, ``tcpdump``) is started
  in the background until its ready line; the page's later blocks run against it, and
  it is stopped (SIGTERM) when a daemon of its kind replaces it or the page ends.  A
  block ``pkill -INT -f '<a tcpdump block's command>'`` stops that tcpdump as the
  page says (once its file has stopped growing, as a person's pause would).
- ```python: a program, run in a fresh interpreter; one that defines ``test_*``
  functions is run by pytest, where the ``kafka_broker`` plugin serves it.
- ```text right after one of those: what it prints on stdout.  A line ``...`` stands
  for any lines, ``[...]`` inside a line for any text.
- anything else (```, ```properties, ```json, ```python excerpt): output, files and
  excerpts of the source, never run.  Such a block may not hold a ``$ `` prompt line:
  a command is shown in a block that runs, or not as a command.

What is rewritten before a command runs, so that it runs here as it would for a user:
``/tmp/`` is a folder of this test's own; ``.venv/bin/`` and ``make run`` use the
interpreter running the tests; ``KAFKA_LOG_DIRS`` points a durable broker's logs into
that folder (where its default, /tmp/kafka-logs, would be).  The commands use Kafka's
default ports (9092, and 9404 for metrics), so the pages run under the machine-wide
lock of tests/integration/test_make_run.py.  ``make test`` and ``make test-ft*``,
which would run this suite inside itself or build an interpreter for 20 minutes, are
checked with ``make -n`` (the target exists and its recipe expands); .ci/run runs them.
docs/tutorial.md is run by tests/integration/test_cli.py, on a free port, and the
spark-submit command of docs/conformance.md by tests/spark/test_conformance_runtime.py
(BLOCKS_RUN_ELSEWHERE: Spark's JVM would double this suite's time).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.capture.tcpdump import wait_until_written
from tests.integration.test_make_run import default_ports

REPO = Path(__file__).resolve().parents[1]
BIN = f"{sys.prefix}/bin"
PAGES = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
RUN_ELSEWHERE = {"docs/tutorial.md": "tests/integration/test_cli.py"}
# Commands another test runs (Spark's JVM takes a minute here): how the command starts,
# the test, and what that test's source must hold to be running the same command.
BLOCKS_RUN_ELSEWHERE = [
    (re.compile(r"^PYSPARK_PYTHON=\.venv/bin/python \.venv/bin/spark-submit "),
     "tests/spark/test_conformance_runtime.py",
     ('"spark-submit")', '"PYSPARK_PYTHON"', '"spark_jobs/conformance.py"'))]
OTHER_PORTS = (9093, 9094, 19092)   # the listener examples' ports beside 9092
COMMAND_TIMEOUT = 90
READY_TIMEOUT = 60
DRY_RUN = re.compile(r"^make test(-ft|-ft-stress)?\b")
# kind of daemon, how its command starts, the line that says it is ready
# (environment assignments first, and no pipe or list: a daemon's command is one program)
ENV = r"^(?:[A-Z_]+=\S+ )*"
DAEMONS = [("broker", re.compile(ENV + r"(make run|(\S*/)?kafka-net serve|(\S*/)?python -m "
                                       r"kafka_net serve)\b[^|&;]*$"),
            re.compile(r"kafka-net started in \d+ ms")),
           ("tcpdump", re.compile(ENV + r"tcpdump\b[^|&;]*$"), re.compile(r"listening on "))]
# A block that stops a daemon the page started (as Ctrl-C in its terminal would): its
# kind, and the command, which must name that daemon's own command line.
STOPS = [("tcpdump", re.compile(r"^pkill -INT -f '(tcpdump [^']*)'$"))]
GENERATED = re.compile(r"<!-- (\S+):begin -->.*?<!-- \1:end -->", re.DOTALL)


@dataclass
class Block:
    page: str
    line: int
    lang: str   # the whole info string: "sh", "python", "text", "python excerpt", ""
    code: str


FENCE = re.compile(r"^([ ]*)```([^\n`]*)\n(.*?)^\1```[ ]*$", flags=re.MULTILINE | re.DOTALL)


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The page's fenced blocks, those indented in a list item too (dedented)."""
    if text is None:
        text = (REPO / page).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        indent = len(m.group(1))
        code = "".join(line[indent:] for line in m.group(3).splitlines(keepends=True))
        found.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group(2).strip(), code))
    return found


def commands(code: str) -> list[str]:
    """The commands of an sh block: continuations joined, comments and blanks dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line]


def matches(expected: str, actual: str) -> bool:
    """Line by line; a line ``...`` is any number of lines, ``[...]`` any text in a line."""
    parts = []
    for line in expected.splitlines():
        if line == "...":
            parts.append(r"(?:.*\n)*?")
        else:
            parts.append(".*".join(re.escape(p) for p in line.split("[...]")) + r"\n")
    return re.fullmatch("".join(parts), actual) is not None


class Page:
    """One page's run: its folder, environment and daemons."""

    def __init__(self, page: str, tmp: Path):
        self.page, self.tmp = page, tmp
        self.daemons: dict[str, tuple[subprocess.Popen, list[str], Block]] = {}
        self.env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}",
                        KAFKA_LOG_DIRS=str(tmp / "kafka-logs"), PYTHONUNBUFFERED="1")
        for key in ("KAFKA_NET_FREE_THREADED", "VIRTUAL_ENV"):
            self.env.pop(key, None)

    def rewrite(self, command: str) -> str:
        command = command.replace("/tmp/", f"{self.tmp}/").replace(".venv/bin/", f"{BIN}/")
        return re.sub(r"(^|\n)make run\b", rf"\1make --no-print-directory run BIN={BIN}",
                      command)

    def where(self, block: Block) -> str:
        return f"{block.page}:{block.line}"

    def run_sh(self, block: Block) -> str:
        cmds = commands(block.code)
        for starts, test, holds in BLOCKS_RUN_ELSEWHERE:
            if cmds and starts.match(cmds[0]):
                source = (REPO / test).read_text(encoding="utf-8")
                assert all(h in source for h in holds), f"{test} no longer runs {cmds[0]}"
                return ""
        for kind, starts, ready in DAEMONS:
            if cmds and starts.match(re.sub(r"'[^']*'|\"[^\"]*\"", "''", cmds[0])):
                assert len(cmds) == 1, f"{self.where(block)}: a daemon's block holds it alone"
                self.start(kind, ready, block, cmds[0])
                return ""
        for kind, stops in STOPS:
            if cmds and stops.match(cmds[0]):
                assert len(cmds) == 1, f"{self.where(block)}: a stop's block holds it alone"
                return self.stop_by_command(kind, block, stops.match(cmds[0]).group(1))
        if cmds and DRY_RUN.match(cmds[0]):
            assert len(cmds) == 1, f"{self.where(block)}: make test alone in its block"
            return self.shell(block, cmds[0].replace("make ", "make -n ", 1))
        return self.shell(block, block.code)

    def shell(self, block: Block, code: str) -> str:
        return self.execute(block, ["bash", "-eo", "pipefail", "-c", self.rewrite(code)], REPO)

    def run_python(self, block: Block) -> str:
        if re.search(r"^def test_", block.code, flags=re.MULTILINE):
            test = self.tmp / f"test_block_{block.line}.py"
            test.write_text(block.code, encoding="utf-8")
            self.execute(block, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 str(test)], self.tmp)
            return ""
        return self.execute(block, [sys.executable, "-c", block.code], REPO)

    def execute(self, block: Block, argv: list[str], cwd: Path) -> str:
        """Run to the end in a session of its own, killed whole (a JVM too) if it hangs."""
        proc = subprocess.Popen(argv, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"{self.where(block)} still running after {COMMAND_TIMEOUT} s:\n"
                        f"{out[-3000:]}\n{err[-3000:]}{self.daemon_logs()}")
        assert proc.returncode == 0, (f"{self.where(block)} exited {proc.returncode}:\n"
                                      f"{out[-3000:]}\n{err[-3000:]}{self.daemon_logs()}")
        return out

    def start(self, kind: str, ready: re.Pattern, block: Block, command: str) -> None:
        self.stop(kind)
        proc = subprocess.Popen(["bash", "-c", self.rewrite(command)], cwd=REPO,
                                env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        lines: list[str] = []
        seen = threading.Event()

        def pump():
            for line in proc.stdout:
                lines.append(line)
                if ready.search(line):
                    seen.set()
            seen.set()

        threading.Thread(target=pump, daemon=True).start()
        self.daemons[kind] = (proc, lines, block)
        seen.wait(READY_TIMEOUT)
        assert proc.poll() is None and any(ready.search(x) for x in lines), (
            f"{self.where(block)}: no ready line within {READY_TIMEOUT} s:\n" + "".join(lines))

    def stop(self, kind: str, check: bool = True) -> None:
        """SIGTERM to the daemon's process group; with ``check``, fail if it had died."""
        if kind not in self.daemons:
            return
        proc, lines, block = self.daemons.pop(kind)
        running = proc.poll() is None
        if running:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert running or not check, (f"{self.where(block)} died while the page ran:\n"
                                      + "".join(lines))

    def stop_by_command(self, kind: str, block: Block, names: str) -> str:
        """Run the page's own stop command for the ``kind`` daemon, whose command must
        start with what it names (pkill -f matches part of a command line), and wait (bounded) until the daemon has exited."""
        assert kind in self.daemons, f"{self.where(block)}: no {kind} running to stop"
        proc, lines, started = self.daemons[kind]
        assert commands(started.code)[0].startswith(names), (
            f"{self.where(block)} stops {names!r}, not {self.where(started)}'s command")
        written = re.search(r"-w (\S+)", self.rewrite(names))
        if written:
            wait_until_written(written.group(1))
        out = self.shell(block, block.code)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.where(block)} did not stop {self.where(started)}:\n"
                        + "".join(lines))
        del self.daemons[kind]
        return out

    def stop_all(self, check: bool = True) -> None:
        for kind in list(self.daemons):
            self.stop(kind, check)

    def daemon_logs(self) -> str:
        return "".join(f"\n--- {self.where(b)} ---\n" + "".join(lines[-40:])
                       for _, lines, b in self.daemons.values())


def executed(page: str) -> list[Block]:
    return [b for b in blocks(page) if b.lang in ("sh", "python")]


def test_the_readme_fits_on_a_page():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) < 300


def test_every_page_the_readme_links_exists():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert len(links) >= 10
    assert [link for link in links if not (REPO / link).exists()] == []


@pytest.mark.parametrize("page", PAGES)
def test_no_command_is_shown_where_it_does_not_run(page):
    """A ``$ `` prompt in a block that is never run would be a command no test runs
    (blocks a docs/make_*.py script writes from a real run are allowed)."""
    text = GENERATED.sub("", (REPO / page).read_text(encoding="utf-8"))
    for block in blocks(page, text):
        if block.lang not in ("sh", "python"):
            prompts = [x for x in block.code.splitlines() if x.startswith("$ ")]
            assert not prompts, f"{page}: {prompts[0]!r} is shown as a command but never runs"


@pytest.mark.interop
@pytest.mark.parametrize("page", [p for p in PAGES if p not in RUN_ELSEWHERE and executed(p)])
def test_the_pages_commands_run(page, tmp_path):
    """The page's sh and python blocks in order, each checked against the text block
    after it; its daemons up from their block to the page's end."""
    page_blocks = blocks(page)
    with default_ports():
        for port in OTHER_PORTS:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(("127.0.0.1", port))
        run = Page(page, tmp_path)
        try:
            for i, block in enumerate(page_blocks):
                began = time.monotonic()
                if block.lang == "sh":
                    out = run.run_sh(block)
                elif block.lang == "python":
                    out = run.run_python(block)
                else:
                    continue
                print(f"{run.where(block)}: {time.monotonic() - began:.1f} s")
                after = page_blocks[i + 1] if i + 1 < len(page_blocks) else None
                if after is not None and after.lang == "text":
                    assert matches(after.code, out), (
                        f"{run.where(block)} printed:\n{out}\n{run.where(after)} says:\n"
                        f"{after.code}")
            run.stop_all()
        finally:
            run.stop_all(check=False)


def test_the_matcher_takes_what_it_should_and_no_more():
    assert matches("a\n...\nc [...] e\n", "a\nb\nb\nc d e\n")
    assert matches("a\n...\n", "a\n")
    assert not matches("a\nc\n", "a\nb\nc\n")
    assert not matches("x [...] z\n", "x y\n")
    assert commands("a \\\n  b  # c\n\n# d\ne\n") == ["a  b", "e"]
    listed = blocks("x.md", "- item:\n\n  ```sh\n  echo 1\n  ```\n\n```text\n1\n```\n")
    assert [(b.lang, b.code) for b in listed] == [("sh", "echo 1\n"), ("text", "1\n")]
