"""tcpdump on the loopback for the live capture tests (tests/capture, tests/spark):
started with a bounded wait for "listening on", stopped with SIGINT once the
file stops growing (bounded), killed if it does not stop."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def wait_until_written(path: str, quiet: float = 0.5, limit: float = 5.0) -> None:
    """Let the last packets reach the file before tcpdump is stopped (as a person's
    pause before Ctrl-C does): wait, at most ``limit`` s, until it has not grown for
    ``quiet`` s."""
    size, stable_since, deadline = -1, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline and time.monotonic() - stable_since < quiet:
        now = os.path.getsize(path) if os.path.exists(path) else 0
        if now != size:
            size, stable_since = now, time.monotonic()
        time.sleep(0.05)


class Tcpdump:
    """tcpdump -i lo for one port (``snaplen`` 0: whole packets), started and stopped
    with bounded waits.  ``buffer_kib``: the kernel's capture ring (-B); with
    --immediate-mode each packet takes a slot of the interface's MTU (64 KiB on
    lo), so 64 MiB holds about a thousand packets."""

    def __init__(self, path, port: int, snaplen: int = 0, buffer_kib: int = 65536) -> None:
        self.path, self.port, self.snaplen = str(path), port, snaplen
        self.buffer_kib = buffer_kib
        self.log = str(path) + ".stderr"
        self.proc = None

    def start(self) -> None:
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                # --immediate-mode: packets reach the file at once (else a SIGINT
                # can lose what still sits in the kernel's ring); -B 64 MiB: no drops
                # at the tests' rates.
                ["tcpdump", "-i", "lo", "-w", self.path, "-U", "-n", "--immediate-mode",
                 "-B", str(self.buffer_kib), "-s", str(self.snaplen),
                 f"tcp port {self.port}"],
                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump exited: {self.stderr()}")
            if "listening on" in self.stderr():
                return
            time.sleep(0.05)
        raise RuntimeError(f"tcpdump did not start: {self.stderr()}")

    def stderr(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        wait_until_written(self.path)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
