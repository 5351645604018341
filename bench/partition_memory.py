"""What a partition costs in memory: the measurement behind the partition limits.

``python -m bench.partition_memory 10000 100000`` creates one topic of N
partitions through the :class:`KafkaApis` of a ``BrokerCore`` (as CreateTopics does; a fresh process
per N) and prints the RSS growth per partition, then answers one Metadata
request for every topic (v12, encoded as it goes on the wire) and prints the
response size and the RSS it took to build.  ``max.partitions.per.request``
and ``max.broker.partitions`` (kafka_net/config/broker_keys.py) are set from these
figures; see :mod:`kafka_net.server.partition_limits`.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from types import SimpleNamespace

import psutil

from kafka_net.config import ServerConfig
from kafka_net.protocol.codec import encode_response
from kafka_net.server.apis import RequestContext
from kafka_net.server.broker import BrokerCore
from kafka_net.server.handlers import metadata

MiB = 1 << 20


def measure(n: int) -> None:
    apis = BrokerCore(ServerConfig(log_store="memory")).apis
    proc = psutil.Process()
    gc.collect()
    before = proc.memory_info().rss
    apis.create_topic("t", n)
    gc.collect()
    created = proc.memory_info().rss
    request = SimpleNamespace(header=SimpleNamespace(api_version=12, api_key=3),
                              listener_name="PLAINTEXT")
    body = metadata.handle(RequestContext(request, apis),
                           {"topics": None, "allow_auto_topic_creation": False})
    data = encode_response(3, 12, 1, body)
    answered = proc.memory_info().rss
    print(f"{n} partitions: {(created - before) / n:.0f} B RSS each "
          f"({(created - before) / MiB:.1f} MiB); Metadata for all: "
          f"{len(data) / MiB:.1f} MiB on the wire, {(answered - created) / MiB:.1f} MiB "
          f"RSS to build ({(answered - created) / n:.0f} B per partition)")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        measure(int(argv[1]))
        return
    for n in argv or ["10000", "100000"]:   # one process each: RSS is not given back
        subprocess.run([sys.executable, "-m", "bench.partition_memory", "--one", n], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
