"""confluent-kafka (librdkafka) producer and consumer throughput, one client process.

``python -m bench --group clients`` starts this module as a subprocess for each
measurement, so the client has a process (and its librdkafka threads) of its own
and its Python loop does not share a GIL with the benchmark driver::

    python -m bench.clients produce --bootstrap 127.0.0.1:9092 --topic T \\
        --messages 200000 --size 100
    python -m bench.clients consume --bootstrap 127.0.0.1:9092 --topic T \\
        --messages 200000 --size 100

Both print one JSON object on stdout; exit code 0 only when the run was
complete and clean.

* produce: a ``Producer`` with librdkafka's defaults except
  ``bootstrap.servers`` (acks=all, linger.ms=5, batch.size=1000000, no
  compression, not idempotent).  The topic's metadata is fetched first
  (``list_topics``), outside the timing, so that connecting is not counted.
  Timed from the first ``produce`` to ``flush`` returning.  When the local
  queue is full (``BufferError``: queue.buffering.max.messages, 100,000 by
  default) the loop serves delivery reports with ``poll`` and tries again.
  Every message's delivery report must say delivered.
* consume: a ``Consumer`` with the defaults except ``bootstrap.servers``,
  ``group.id`` (librdkafka refuses to create a consumer without one; no
  subscribe, so there is no rebalance: ``assign`` with OFFSET_BEGINNING on
  every partition) and ``queued.min.messages``, raised from 100,000 to
  1,000,000: with the default, whenever the fetcher got 100,000 messages
  ahead of this Python loop librdkafka paused fetching for
  ``fetch.queue.backoff.ms`` (1 s, "Fetch backoff for 1000ms: Local: Queue
  full" in its debug log), so a run took either about 0.35 s or about 1.7 s
  on both servers alike: a client timer, not the broker.  The 200,000
  messages (about 20 MB) stay under ``queued.max.messages.kbytes`` (64 MB).
  Timed from ``assign`` to the last expected message.
  Each partition's offsets must come dense from 0 and each value must have the
  produced size: a lost or duplicated message fails the run.  The partitions'
  high watermarks, read after consuming, are reported (``high_watermarks``)
  for the caller to check against the count.

Everything is bounded by ``--timeout``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

QUEUED_MIN_MESSAGES = 1_000_000

def produce(bootstrap: str, topic: str, messages: int, size: int, timeout: float) -> dict:
    from confluent_kafka import KafkaException, Producer
    deadline = time.monotonic() + timeout
    producer = Producer({"bootstrap.servers": bootstrap})
    out = {"mode": "produce", "messages": messages, "size": size, "delivered": 0,
           "failed": 0, "first_error": None, "seconds": 0.0, "queue_full_waits": 0,
           "ok": False}
    try:
        producer.list_topics(topic, timeout=10)
    except KafkaException as exc:
        out["first_error"] = f"metadata: {exc}"
        return out

    def on_delivery(err, msg) -> None:
        if err is None:
            out["delivered"] += 1
        else:
            out["failed"] += 1
            if out["first_error"] is None:
                out["first_error"] = str(err)

    payload = b"v" * size
    produce_ = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    sent = 0
    while sent < messages:
        try:
            produce_(topic, payload, on_delivery=on_delivery)
        except BufferError:
            out["queue_full_waits"] += 1
            if time.monotonic() > deadline:
                out["first_error"] = out["first_error"] or "timed out with a full local queue"
                break
            poll(0.01)
            continue
        sent += 1
        if sent % 1000 == 0:
            poll(0)
    left = producer.flush(max(0.0, deadline - time.monotonic()))
    out["seconds"] = time.perf_counter() - start
    out["sent"] = sent
    out["not_flushed"] = left
    out["ok"] = (sent == messages and left == 0 and out["delivered"] == messages
                 and out["failed"] == 0)
    if not out["ok"] and out["first_error"] is None:
        out["first_error"] = (f"sent {sent}, delivered {out['delivered']}, "
                              f"{left} not flushed before the timeout")
    return out


def consume(bootstrap: str, topic: str, messages: int, size: int, timeout: float) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
    deadline = time.monotonic() + timeout
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}",
                         "queued.min.messages": QUEUED_MIN_MESSAGES})
    out = {"mode": "consume", "messages": messages, "size": size, "received": 0,
           "out_of_order": 0, "wrong_size": 0, "errors": 0, "first_error": None,
           "seconds": 0.0, "ok": False}
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=10)
            partitions = sorted(metadata.topics[topic].partitions)
        except (KafkaException, KeyError) as exc:
            out["first_error"] = f"metadata: {exc!r}"
            return out
        out["partitions"] = len(partitions)
        next_offset = {p: 0 for p in partitions}
        start = time.perf_counter()
        last, first = start, None
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        received = 0
        while received < messages and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10000, timeout=0.5)
            for msg in batch:
                if msg.error() is not None:
                    out["errors"] += 1
                    out["first_error"] = out["first_error"] or str(msg.error())
                    continue
                p = msg.partition()
                if msg.offset() != next_offset[p]:
                    out["out_of_order"] += 1
                next_offset[p] = msg.offset() + 1
                if len(msg.value()) != size:
                    out["wrong_size"] += 1
                received += 1
            if batch:
                last = time.perf_counter()
                if first is None:
                    first = last
        out["seconds"] = last - start
        out["first_message_s"] = (first - start) if first is not None else None
        out["received"] = received
        # Anything more than expected shows up as high watermarks above the count.  Not
        # part of "ok": Tansu 0.6 answers ListOffsets (latest) with less than the records
        # it serves (192,138 of 200,000), so the caller judges this for its subject only.
        try:
            high = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                       for p in partitions)
        except KafkaException as exc:
            out["first_error"] = f"watermarks: {exc!r}"
            return out
        out["high_watermarks"] = high
        out["ok"] = (received == messages and out["errors"] == 0
                     and out["out_of_order"] == 0 and out["wrong_size"] == 0
                     and sum(next_offset.values()) == messages)
        if not out["ok"] and out["first_error"] is None:
            out["first_error"] = (f"received {received} of {messages}, "
                                  f"{out['out_of_order']} out of order, "
                                  f"{out['wrong_size']} of the wrong size")
        return out
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clients",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["produce", "consume"])
    parser.add_argument("--bootstrap", required=True, help="host:port")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes per message")
    parser.add_argument("--timeout", type=float, default=120.0, help="hard cap, seconds")
    args = parser.parse_args(argv)
    run = produce if args.mode == "produce" else consume
    result = run(args.bootstrap, args.topic, args.messages, args.size, args.timeout)
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
