"""BrokerTopicStats: Kafka's per-topic byte, message and request meters.

Kafka's ``ReplicaManager`` marks, for every partition of a Produce request,
``TotalProduceRequestsPerSec`` and on success ``BytesInPerSec`` (the size of
the records) and ``MessagesInPerSec`` (the records appended), else
``FailedProduceRequestsPerSec``; for every partition a Fetch reads,
``TotalFetchRequestsPerSec`` and ``BytesOutPerSec``, else
``FailedFetchRequestsPerSec``.  Each meter exists per topic
(``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders``)
and once for all topics (no ``topic`` tag).  As everywhere in kafka-net, a
meter is its count since startup; a rate is its derivative.

Only topics that exist are counted: a client naming random topics must not
grow the metrics without bound (Kafka does not count unknown topics either).
A deleted topic's meters go with it, as Kafka's ``removeMetrics`` does.
"""

from __future__ import annotations

import threading

METERS = ("BytesInPerSec", "BytesOutPerSec", "MessagesInPerSec",
          "TotalProduceRequestsPerSec", "FailedProduceRequestsPerSec",
          "TotalFetchRequestsPerSec", "FailedFetchRequestsPerSec")
(BYTES_IN, BYTES_OUT, MESSAGES_IN, TOTAL_PRODUCE, FAILED_PRODUCE,
 TOTAL_FETCH, FAILED_FETCH) = range(len(METERS))
GROUP = "kafka.server:type=BrokerTopicMetrics"


class BrokerTopicStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()   # handler threads mark the same topic at once
        self._topics: dict[str, list[int]] = {}

    # One lock round and a few list updates per partition of a request: this runs
    # on every Produce and Fetch, so each meter update is written out.

    def _counts(self, topic: str) -> list[int]:
        counts = self._topics.get(topic)
        if counts is None:
            counts = self._topics[topic] = [0] * len(METERS)
        return counts

    def produced(self, topic: str, size: int, messages: int) -> None:
        with self._lock:
            counts = self._counts(topic)
            counts[TOTAL_PRODUCE] += 1
            counts[BYTES_IN] += size
            counts[MESSAGES_IN] += messages

    def produce_failed(self, topic: str) -> None:
        with self._lock:
            counts = self._counts(topic)
            counts[TOTAL_PRODUCE] += 1
            counts[FAILED_PRODUCE] += 1

    def fetched(self, topic: str, size: int) -> None:
        with self._lock:
            counts = self._counts(topic)
            counts[TOTAL_FETCH] += 1
            counts[BYTES_OUT] += size

    def fetch_failed(self, topic: str) -> None:
        with self._lock:
            counts = self._counts(topic)
            counts[TOTAL_FETCH] += 1
            counts[FAILED_FETCH] += 1

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic's meters (the all-topics sums keep what it counted)."""
        with self._lock:
            counts = self._topics.pop(topic, None)
            if counts is not None:
                removed = self._topics.setdefault("", [0] * len(METERS))
                for meter, amount in enumerate(counts):
                    removed[meter] += amount

    def snapshot(self) -> dict[str, int]:
        """MBean name -> count: every topic's meters, then the all-topics ones."""
        with self._lock:
            topics = {topic: list(counts) for topic, counts in self._topics.items()}
        out: dict[str, int] = {}
        totals = [0] * len(METERS)
        for topic, counts in sorted(topics.items()):
            for meter, amount in enumerate(counts):
                totals[meter] += amount
                if topic:   # "" holds what deleted topics counted
                    out[f"{GROUP},name={METERS[meter]},topic={topic}"] = amount
        for meter, amount in enumerate(totals):
            out[f"{GROUP},name={METERS[meter]}"] = amount
        return out
