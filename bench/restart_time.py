"""How long ``kafka-net serve`` takes to listen again, against partitions,
segments and history (issue 30: restarts stay flat).

``python -m bench.restart_time`` starts real brokers on a temporary log dir
and measures, from the process start to its "kafka-net started" line (the
port open), each restart of:

* **partitions**: one topic of P partitions, stopped cleanly and started again;
* **segments**: one partition holding S segments of 1 MiB;
* **restarts**: a P-partition broker restarted R times, killed with SIGKILL and
  stopped cleanly in turn (each restart appends a leader change per partition
  to the metadata log);
* **create/delete**: R rounds of creating and deleting T topics, a restart after each;
* **share-group**: N records through a share group (confluent-kafka's
  ShareConsumer, acknowledging each poll's records), its topic then deleted,
  and the broker restarted: its first restart and the median of the next few,
  against the same with a few records and against a fresh broker restarted in
  turn with them (issue 30: within 2x of a fresh one).

Each figure is one run on a shared machine: read the shape (flat or growing),
not the milliseconds.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic)

STARTED = re.compile(r"kafka-net started in \d+ ms: .*listening on \w+://[^:]+:(\d+)")
TIMEOUT = 300.0


class Serve:
    def __init__(self, log_dir: str, *overrides: str) -> None:
        args = [sys.executable, "-m", "kafka_net", "serve"]
        for item in ("listeners=PLAINTEXT://127.0.0.1:0", f"log.dirs={log_dir}",
                     "auto.create.topics.enable=false", *overrides):
            args += ["--override", item]
        self.began = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace")
        self.ready = threading.Event()
        self.port = 0
        self.listened_s = 0.0
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(TIMEOUT) or not self.port:
            self.proc.kill()
            raise RuntimeError("kafka-net did not start")

    def _read(self) -> None:
        for line in self.proc.stderr:
            if not self.port and (m := STARTED.search(line)):
                self.listened_s = time.monotonic() - self.began
                self.port = int(m[1])
                self.ready.set()
        self.ready.set()

    def stop(self, kill: bool = False) -> None:
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self.proc.wait(TIMEOUT)

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": f"127.0.0.1:{self.port}"})


def create(broker: Serve, topics: dict[str, int]) -> None:
    admin = broker.admin()   # kept: the futures need their handle
    futures = admin.create_topics([NewTopic(n, p, 1) for n, p in topics.items()])
    for future in futures.values():
        future.result(timeout=TIMEOUT)


def restart_time(log_dir: str) -> float:
    """A clean start of the broker on ``log_dir``: its time to listen."""
    broker = Serve(log_dir)
    broker.stop()
    return broker.listened_s


def partitions_case(counts: list[int]) -> list[tuple[str, float]]:
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="kn-restart-") as log_dir:
            broker = Serve(log_dir)
            create(broker, {"t": count})
            broker.stop()
            rows.append((f"{count} partitions, clean restart", restart_time(log_dir)))
    return rows


def segments_case(counts: list[int], crash: bool) -> list[tuple[str, float]]:
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="kn-restart-") as log_dir:
            broker = Serve(log_dir, "log.segment.bytes=1048576",
                           "log.flush.offset.checkpoint.interval.ms=3600000")
            create(broker, {"t": 1})
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}",
                                 "linger.ms": 5})
            for i in range(count * 1024):   # 1 KiB values: a segment per 1024 or so
                producer.produce("t", b"v" * 1000)
                if i % 10000 == 0:
                    producer.poll(0)
            producer.flush(TIMEOUT)
            del producer   # before the broker goes: no reconnect noise
            broker.stop(kill=crash)
            how = "after SIGKILL (no checkpoint since start)" if crash else "clean restart"
            rows.append((f"{count} segments of 1 MiB, {how}", restart_time(log_dir)))
    return rows


def restarts_case(partitions: int, rounds: int) -> list[tuple[str, float]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="kn-restart-") as log_dir:
        broker = Serve(log_dir)
        create(broker, {"t": partitions})
        broker.stop()
        for n in range(1, rounds + 1):
            broker = Serve(log_dir)
            rows.append((f"{partitions} partitions, restart {n} "
                         f"(after {'SIGKILL' if n % 2 == 0 else 'a clean stop'})",
                         broker.listened_s))
            broker.stop(kill=n % 2 == 1)
    return rows


def create_delete_case(topics: int, rounds: int) -> list[tuple[str, float]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="kn-restart-") as log_dir:
        for n in range(1, rounds + 1):
            broker = Serve(log_dir)
            if n > 1:
                rows.append((f"restart after {n - 1} round(s) of {topics} topics created "
                             f"and deleted", broker.listened_s))
            names = {f"r{n}-{i}": 8 for i in range(topics)}
            create(broker, names)
            admin = broker.admin()
            for future in admin.delete_topics(list(names), operation_timeout=60).values():
                future.result(timeout=TIMEOUT)
            broker.stop()
        rows.append((f"restart after {rounds} round(s) of {topics} topics created and deleted",
                     restart_time(log_dir)))
    return rows


def share_group_history(broker: Serve, records: int, per_poll: int) -> float:
    """``records`` records through share group "sg", ``per_poll`` a poll (each
    poll's acknowledgements are a state write), then the topic deleted; returns
    the seconds the share group took to read them."""
    admin = broker.admin()
    reset = ConfigResource(ConfigResource.Type.GROUP, "sg", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([reset]).values():
        future.result(timeout=TIMEOUT)
    create(broker, {"work": 1})
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "linger.ms": 5})
    for _ in range(records):
        while True:
            try:
                producer.produce("work", b"v" * 100)
                break
            except BufferError:   # the local queue is full: let it drain
                producer.poll(0.1)
    producer.flush(TIMEOUT)
    del producer
    consumer = ShareConsumer({"bootstrap.servers": f"127.0.0.1:{broker.port}",
                              "group.id": "sg", "max.poll.records": per_poll})
    consumer.subscribe(["work"])
    began, seen = time.monotonic(), 0
    deadline = began + 3600   # bounded: an hour at most
    try:
        while seen < records and time.monotonic() < deadline:
            # implicit acknowledgement: each poll accepts the previous poll's records
            seen += sum(1 for m in consumer.poll(1.0) if m.error() is None)
        consumer.poll(0.5)   # acknowledges the last poll's records
    finally:
        consumer.close()
    if seen < records:
        raise RuntimeError(f"the share group read {seen} of {records} records in an hour")
    read_s = time.monotonic() - began
    for future in admin.delete_topics(["work"], operation_timeout=60).values():
        future.result(timeout=TIMEOUT)
    return read_s


def share_group_case(counts: list[int], per_poll: int,
                     repeats: int) -> list[tuple[str, float]]:
    """Each history's first restart, then ``repeats`` more restarts of it taken
    in turn with restarts of a fresh broker (an empty log dir started once), so
    that both medians see the same moments of a shared machine's load."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="kn-restart-fresh-") as fresh_dir:
        Serve(fresh_dir).stop()
        fresh_times = []
        for count in counts:
            with tempfile.TemporaryDirectory(prefix="kn-restart-") as log_dir:
                broker = Serve(log_dir)
                read_s = share_group_history(broker, count, per_poll)
                broker.stop()
                first = restart_time(log_dir)
                fresh_times.append(restart_time(fresh_dir))
                later = []
                for _ in range(repeats):
                    later.append(restart_time(log_dir))
                    fresh_times.append(restart_time(fresh_dir))
                state = sum(os.path.getsize(os.path.join(d, n))
                            for d, _, names in os.walk(log_dir) if "__share_group_state" in d
                            for n in names if n.endswith(".log"))
                what = (f"{count:,} records through a share group, {per_poll} a poll (read in "
                        f"{read_s:.0f} s), topic deleted ({state / 1e6:.1f} MB of "
                        f"__share_group_state segments left)")
                rows.append((f"{what}: the first clean restart", first))
                if later:
                    rows.append((f"{what}: median of the {repeats} clean restarts after it",
                                 statistics.median(later)))
        rows.insert(0, (f"fresh broker (an empty log dir started once): median of "
                        f"{len(fresh_times)} clean restarts, taken in turn with the ones "
                        f"below", statistics.median(fresh_times)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="10,100,300")
    parser.add_argument("--segments", default="1,8,32")
    parser.add_argument("--restart-partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--share-records", default="1000,500000")
    parser.add_argument("--share-poll-records", type=int, default=10)
    parser.add_argument("--share-repeats", type=int, default=5,
                        help="restarts after the first one of each share-group history, "
                             "each beside a fresh broker's")
    parser.add_argument("--cases", default="partitions,segments,restarts,create-delete,"
                                           "share-group")
    args = parser.parse_args()
    cases = args.cases.split(",")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    rows = []
    if "partitions" in cases:
        rows += partitions_case([int(p) for p in args.partitions.split(",")])
    if "segments" in cases:
        rows += segments_case([int(s) for s in args.segments.split(",")], crash=False)
        rows += segments_case([int(s) for s in args.segments.split(",")], crash=True)
    if "restarts" in cases:
        rows += restarts_case(args.restart_partitions, args.rounds)
    if "create-delete" in cases:
        rows += create_delete_case(args.topics, args.rounds)
    if "share-group" in cases:
        rows += share_group_case([int(n) for n in args.share_records.split(",")],
                                 args.share_poll_records, args.share_repeats)
    print("| case | time to listen |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} s |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
