"""Partition storage behind a small interface (:class:`~.base.PartitionLog`).

Two stores, chosen by ``log.store``:

* :mod:`.memory`: :class:`InMemoryLog`, batches in a list (``--dev``, the
  pytest fixture, ``kafka_net.Broker``); nothing survives a restart;
* :mod:`.unified_log`: :class:`~.unified_log.UnifiedLog`, Kafka's on-disk log
  (:mod:`.local_log`, :mod:`.segment`, :mod:`.file_records`, :mod:`.index`),
  opened by :class:`kafka_net.server.log_manager.LogManager` under ``log.dirs``.
"""

from kafka_net.server.storage.base import AppendResult, FetchResult, PartitionLog
from kafka_net.server.storage.memory import InMemoryLog

__all__ = ["AppendResult", "FetchResult", "InMemoryLog", "PartitionLog"]
