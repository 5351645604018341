"""The partition limits a Python broker needs (kafka-net keys, checked before allocating).

Kafka lets one CreateTopics ask for 2**31 - 1 partitions; a JVM broker with a
controller in front refuses it late and expensively, and this one would try
to build every partition object and die of memory first.  So two kafka-net
keys bound what a client can make the broker allocate, and both are checked
before anything is created:

* ``max.partitions.per.request``: the partitions one CreateTopics or
  CreatePartitions may add, summed over its topics in request order (a topic
  that would go past the limit is refused, the ones before it are served);
* ``max.broker.partitions`` (KIP-578's name): the partitions the broker
  holds in all, checked under the MetadataCache lock so two concurrent
  creators cannot both pass it.

Both answer POLICY_VIOLATION, the code Kafka uses for a request a broker
policy refuses; the message names the limit and its key.  A count of zero
or less stays Kafka's INVALID_PARTITIONS (checked before these).

Measured with ``python -m bench.partition_memory``: an empty partition costs
about 1.1 KiB of RSS, and a Metadata request for every topic builds about
0.6 KiB per partition while it is answered (bench/RESULTS.md); so the
defaults, 10000 per request and 100000 in the broker, keep a full broker
under 1 GiB.
"""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode


class TopicCreationError(Exception):
    """A topic or its partitions may not be created: an error code and Kafka's message."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def request_limit_error(already: int, adding: int, limit: int) -> TopicCreationError | None:
    """The error if ``adding`` partitions, after ``already`` in this request, pass the limit."""
    if already + adding <= limit:
        return None
    return TopicCreationError(
        ErrorCode.POLICY_VIOLATION,
        f"Creating {adding} partition(s) would bring this request to {already + adding}; "
        f"at most {limit} may be created in one request (max.partitions.per.request).")


def broker_limit_error(current: int, adding: int, limit: int | None) -> TopicCreationError | None:
    """The error if ``adding`` partitions to the ``current`` ones pass the broker's limit."""
    if limit is None or current + adding <= limit:
        return None
    return TopicCreationError(
        ErrorCode.POLICY_VIOLATION,
        f"Creating {adding} partition(s) would bring the broker to {current + adding}; "
        f"it may hold at most {limit} (max.broker.partitions).")


def not_growing_error(current: int, count: int) -> TopicCreationError | None:
    """CreatePartitions may only add partitions (Kafka cannot remove them)."""
    if count > current:
        return None
    return TopicCreationError(
        ErrorCode.INVALID_PARTITIONS,
        f"Topic currently has {current} partitions, which is higher than or equal to "
        f"the requested {count}.")


class RequestBudget:
    """Partitions one request has added so far, against ``max.partitions.per.request``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def error(self, adding: int) -> TopicCreationError | None:
        return request_limit_error(self.used, adding, self.limit)

    def spend(self, adding: int) -> None:
        self.used += adding
