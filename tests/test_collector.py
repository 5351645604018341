"""The cyclic GC paused while ``kafka-net`` starts (kafka_net/collector.py): back on,
with the start's objects frozen, once the broker listens; untouched elsewhere."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from kafka_net import collector

REPO = Path(__file__).resolve().parents[1]


def test_resume_turns_the_collector_back_on_with_the_start_frozen():
    frozen = gc.get_freeze_count()
    collector.pause_collector()
    try:
        assert not gc.isenabled()
    finally:
        collector.resume_collector()
    try:
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()


def test_resume_without_a_pause_changes_nothing():
    frozen = gc.get_freeze_count()
    collector.resume_collector()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_collector_someone_else_turned_off_stays_off():
    gc.disable()
    try:
        collector.pause_collector()
        collector.resume_collector()
        assert not gc.isenabled()
    finally:
        gc.enable()


# The command itself: a watcher thread waits (bounded) until the broker listens, then
# reports the collector's state and stops the broker with SIGTERM.
WATCH = r"""
import gc, os, signal, sys, threading, time
from kafka_net import collector, entry
collector.pause_collector()   # as entry.main does first (then a no-op), before the watcher
seen = {}
def watch():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not gc.isenabled():
        time.sleep(0.01)
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=watch, daemon=True).start()
code = entry.main(["serve", "--dev", "--override", "listeners=PLAINTEXT://127.0.0.1:0"])
print(code, seen.get("enabled"), seen.get("frozen", 0) > 10000)
"""


def test_the_broker_turns_the_collector_back_on_once_it_listens():
    out = subprocess.run([sys.executable, "-c", WATCH], cwd=REPO, capture_output=True,
                         text=True, timeout=90)
    assert out.stdout.split() == ["0", "True", "True"], out.stdout + out.stderr
    assert "kafka-net started in" in out.stderr
