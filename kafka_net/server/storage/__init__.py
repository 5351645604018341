"""Partition storage behind a small interface (:class:`~.base.PartitionLog`).

Only an in-memory log exists today (:mod:`.memory`); a durable log can be
added behind the same interface.
"""

from kafka_net.server.storage.base import AppendResult, FetchResult, PartitionLog
from kafka_net.server.storage.memory import InMemoryLog

__all__ = ["AppendResult", "FetchResult", "InMemoryLog", "PartitionLog"]
