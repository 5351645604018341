"""The state the GIL guarded by accident: stress tests (docs/design.md, "Free threading").

Each test has many threads hit one piece of shared broker state at once and
checks an invariant no interleaving may break (no lost count, one completion,
dense offsets, every response seen).  The ``guarded`` variant runs the code as
it is and must keep the invariant on every interpreter.

The ``unguarded`` variant first replaces the lock that guards the state by one
that does nothing, and must see the invariant broken: that shows the test can
catch the race the lock prevents.  It runs only on a free-threaded CPython with
the GIL off (``make test-ft``); under the GIL a thread switch falls only
between bytecodes, so a lock-free read-modify-write may or may not lose an
update there, and such a run proves nothing either way (the skip says so).
"""

from __future__ import annotations

import collections
import os
import selectors
import sys
import threading
import types

import pytest

from kafka_net.metrics import RequestMetrics
from kafka_net.network.memory_pool import SimpleMemoryPool
from kafka_net.network.processor import Processor
from kafka_net.network.request_queue import RequestQueue
from kafka_net.network.wakeup import WakeupSocketpair
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.server.broker_topic_stats import BrokerTopicStats
from kafka_net.server.group.coordinator import GroupCoordinator
from kafka_net.server.group.group import GroupConfig
from kafka_net.server.purgatory import DelayedOperation
from kafka_net.server.quotas.client_quota_manager import ClientQuotaManager
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.share.coordinator import ShareGroupCoordinator, ShareGroupError
from kafka_net.server.share.share_partition_manager import ShareConfig
from kafka_net.server.storage import InMemoryLog
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator

THREADS = 8
UNGUARDED_ROUNDS = 30   # rounds the unguarded variant gets to show one broken invariant


def gil_enabled() -> bool:
    return getattr(sys, "_is_gil_enabled", lambda: True)()


def test_the_gil_is_off_under_make_test_ft():
    """make test-ft sets KAFKA_NET_FREE_THREADED=1: there the interpreter must be a
    free-threaded build and no extension module imported so far (crc32c, cramjam,
    the client libraries, ...) may have turned the GIL back on."""
    if not os.environ.get("KAFKA_NET_FREE_THREADED"):
        pytest.skip("not the free-threaded run (make test-ft checks it)")
    import sysconfig
    assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1, sys.version
    assert sys._is_gil_enabled() is False


class NoLock:
    """The unguarded variant's stand-in for a threading.Lock."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def acquire(self, *args, **kwargs) -> bool:
        return True

    def release(self) -> None:
        pass


def hammer(target, threads: int = THREADS) -> None:
    """Run ``target(i)`` on ``threads`` threads started together; re-raise their errors."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait(30)
            target(i)
        except BaseException as exc:   # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers), "a stress thread did not finish"
    assert not errors, errors


def check(one_round, guarded: bool) -> None:
    """``one_round(guarded)`` returns the invariant's violations (empty: kept)."""
    if guarded:
        assert one_round(True) == []
        return
    if gil_enabled():
        pytest.skip("unguarded variant: meaningful only with the GIL off (make test-ft); "
                    "under the GIL it may pass or fail either way")
    for _ in range(UNGUARDED_ROUNDS):
        if one_round(False):
            return
    pytest.fail(f"without its lock the invariant held for {UNGUARDED_ROUNDS} rounds: "
                "this test cannot tell the guarded code from the unguarded")


variants = pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "unguarded"])


# -- metrics -------------------------------------------------------------------------


@variants
def test_broker_topic_stats_lose_no_mark(guarded):
    marks = 4000

    def one_round(guarded):
        stats = BrokerTopicStats()
        if not guarded:
            stats._lock = NoLock()
        hammer(lambda i: [stats.produced("orders", 10, 2) for _ in range(marks)])
        snap = stats.snapshot()
        group = "kafka.server:type=BrokerTopicMetrics"
        want = {"TotalProduceRequestsPerSec": THREADS * marks,
                "BytesInPerSec": THREADS * marks * 10,
                "MessagesInPerSec": THREADS * marks * 2}
        return [(m, snap[f"{group},name={m},topic=orders"], n) for m, n in want.items()
                if snap[f"{group},name={m},topic=orders"] != n]

    check(one_round, guarded)


@variants
def test_request_metrics_lose_no_count(guarded):
    records = 4000

    def one_round(guarded):
        metrics = RequestMetrics()
        if not guarded:
            metrics._lock = NoLock()
        hammer(lambda i: [metrics.record(0, 9) for _ in range(records)])
        counted = metrics.requests[(0, 9)]
        return [] if counted == THREADS * records else [counted]

    check(one_round, guarded)


@variants
def test_quota_sensor_records_every_value(guarded):
    records = 3000

    def one_round(guarded):
        manager = ClientQuotaManager("Produce", num_samples=11, window_size_s=1,
                                     clock_ms=lambda: 5_000)   # one sample window
        if not guarded:
            manager._lock = NoLock()
        hammer(lambda i: [manager.record_no_throttle("alice", "producer-1", 1.0)
                          for _ in range(records)])
        (sensors,) = manager._sensors.values()
        total = sensors.rate.total(5_000)
        return [] if total == THREADS * records else [total]

    check(one_round, guarded)


# -- memory pool (queued.max.request.bytes) ----------------------------------------------


@variants
def test_memory_pool_gets_every_byte_back(guarded):
    rounds = 3000

    def one_round(guarded):
        pool = SimpleMemoryPool(1 << 20, 1 << 10)
        if not guarded:
            pool._lock = NoLock()

        def borrow(i):
            for _ in range(rounds):
                assert pool.try_allocate(100)
                pool.release(100)

        hammer(borrow)
        return [] if pool.available == pool.size else [pool.available]

    check(one_round, guarded)


# -- purgatory -------------------------------------------------------------------------


class CountingOperation(DelayedOperation):
    def __init__(self) -> None:
        super().__init__(60_000)
        self.completions = 0

    def try_complete(self) -> bool:
        return self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1   # a second completion would answer a request twice


@variants
def test_a_delayed_operation_completes_once(guarded):
    """The reaper, the handler that parks it and the handlers whose appends check
    its key race to complete one operation: exactly one of them answers."""

    def one_round(guarded):
        ops = [CountingOperation() for _ in range(2000)]
        if not guarded:
            for op in ops:
                op._lock = NoLock()
        won = collections.Counter()

        def complete_all(i):
            won[i] = sum(op.force_complete() for op in ops)

        hammer(complete_all, threads=4)
        twice = [op.completions for op in ops if op.completions != 1]
        return twice + ([sum(won.values())] if sum(won.values()) != len(ops) else [])

    check(one_round, guarded)


# -- partition log ------------------------------------------------------------------------


@variants
def test_concurrent_producers_get_dense_distinct_offsets(guarded):
    batch = bytes(build_batch([(None, b"x", (), 1000)]))
    appends = 500

    def one_round(guarded):
        log = InMemoryLog()
        if not guarded:
            log._lock = NoLock()
        bases: list[list[int]] = [[] for _ in range(THREADS)]

        def produce(i):
            for _ in range(appends):
                bases[i].append(log.append(bytearray(batch), 1, 1000).base_offset)

        hammer(produce)
        seen = sorted(b for per_thread in bases for b in per_thread)
        problems = [] if seen == list(range(THREADS * appends)) else ["offsets"]
        if log.log_end_offset != THREADS * appends:
            problems.append(("log end", log.log_end_offset))
        return problems

    check(one_round, guarded)


# -- coordinators ---------------------------------------------------------------------------


@variants
def test_one_group_object_and_one_group_type_per_group_id(guarded):
    """JoinGroups for a new group on several handler threads must land in one Group
    (or the rebalance never sees them together), while share-group joins race them
    for the same ids: an id is made a classic group or a share group, never both.
    Kafka keeps every kind in one map; here the check of the other kind and the
    creation are one step under GroupRegistry.id_claim, which the unguarded
    variant removes (the registry's own dict insert is atomic either way)."""

    def one_round(guarded):
        coordinator = GroupCoordinator(GroupConfig(), lambda topic: None)
        share = ShareGroupCoordinator(ShareConfig(), ReplicaManager(), None,
                                      classic_groups=coordinator.registry)
        coordinator.share = share
        if not guarded:
            coordinator.registry.id_claim = NoLock()
        ids = [f"group-{n}" for n in range(1500)]
        got: list[list] = [[] for _ in range(4)]

        def work(i):
            for g in ids:
                if i % 2:
                    try:
                        share._claim(g)
                    except ShareGroupError:
                        pass
                else:
                    got[i].append(coordinator.group(g, create=True))
        hammer(work, threads=4)
        split = [g for n, g in enumerate(ids)
                 if len({id(per[n]) for per in got if per and per[n] is not None}) > 1]
        both = [g for g in ids if coordinator.group(g) is not None
                and share.group(g) is not None]
        return split + both

    check(one_round, guarded)


@variants
def test_every_init_producer_id_of_one_transactional_id_gets_its_own_epoch(guarded):
    """Each InitProducerId of a transactional id bumps its epoch under the
    metadata's lock (Kafka's TransactionMetadata inLock): two clients racing must
    not both get the same epoch, or neither would be fenced."""
    calls = 300

    def one_round(guarded):
        coordinator = TransactionCoordinator(TransactionConfig(), ReplicaManager())
        first = coordinator.handle_init_producer_id("tx", 60_000)
        assert first.error_code == ErrorCode.NONE
        if not guarded:
            coordinator.state.get("tx").lock = NoLock()
        results: list[list] = [[] for _ in range(4)]
        hammer(lambda i: results[i].extend(
            coordinator.handle_init_producer_id("tx", 60_000) for _ in range(calls)),
            threads=4)
        done = [r for per in results for r in per]
        assert all(r.error_code == ErrorCode.NONE for r in done)
        epochs = collections.Counter((r.producer_id, r.producer_epoch) for r in done)
        return [pair for pair, n in epochs.items() if n > 1]

    check(one_round, guarded)


def test_idempotent_producer_ids_are_unique():
    coordinator = TransactionCoordinator(TransactionConfig(), ReplicaManager())
    ids: list[list[int]] = [[] for _ in range(THREADS)]
    hammer(lambda i: ids[i].extend(
        coordinator.handle_init_producer_id(None, 60_000).producer_id for _ in range(2000)))
    every = [p for per in ids for p in per]
    assert len(set(every)) == len(every) == THREADS * 2000


# -- the hand-offs: request queue, response queues and their wake-ups ------------------------


def test_the_request_queue_hands_each_request_to_exactly_one_handler():
    """3 Processors put, 8 handlers take (Kafka's 3 + 8), through a bounded queue
    small enough that Processors block on it, and few enough wake-ups that the
    handlers must rely on request_queue.py's wake rule."""
    q = RequestQueue(maxsize=16)
    per_processor, processors, handlers = 3000, 3, 8
    taken: list[list] = [[] for _ in range(handlers)]
    all_put = threading.Barrier(processors)

    def run(i):
        if i < processors:
            for n in range(per_processor):
                if not q.put((i, n)):
                    while q.wake_if_stale():   # the Processor's _watch_queue
                        pass
            if all_put.wait(60) == 0:
                for _ in range(handlers):
                    q.put(None, wake=True)     # one shutdown sentinel per handler
            return
        while (item := q.get(timeout=60)) is not None:
            taken[i - processors].append(item)

    hammer(run, threads=processors + handlers)
    every = [item for per in taken for item in per]
    assert len(every) == len(set(every)) == processors * per_processor


def test_every_response_wakes_its_processor():
    """Handler threads queue responses for one Processor (Processor.enqueue_response)
    while it loops as its run() does: select on the wake-up socketpair, drain it
    (Selector.poll), then take what is queued.  A lost wake-up is a select that
    ran out with responses queued and ``pending`` set, which no later wake-up
    would ever clear: without the poll timeout they would wait for good."""
    processor = types.SimpleNamespace(response_queue=collections.deque(),
                                      wakeup=WakeupSocketpair())
    per_handler = 3000
    handlers = 8
    received: list = []
    lost = []
    finished = threading.Event()

    def processor_loop():
        sel = selectors.DefaultSelector()
        sel.register(processor.wakeup.read_sock, selectors.EVENT_READ)
        try:
            while len(received) < per_handler * handlers:
                if not sel.select(10.0):
                    if processor.response_queue and processor.wakeup.pending:
                        lost.append(len(processor.response_queue))
                        processor.wakeup.drain()   # recover, and go on counting
                    continue
                processor.wakeup.drain()
                for _ in range(len(processor.response_queue)):
                    received.append(processor.response_queue.popleft())
        finally:
            sel.close()
            finished.set()

    loop = threading.Thread(target=processor_loop, daemon=True)
    loop.start()
    try:
        hammer(lambda i: [Processor.enqueue_response(processor, (i, n))
                          for n in range(per_handler)], threads=handlers)
        finished.wait(120)
    finally:
        processor.wakeup.close()
    assert finished.is_set()
    assert lost == []
    assert sorted(received) == [(i, n) for i in range(handlers) for n in range(per_handler)]
