"""What client quotas cost a handler: CPU per request in ``KafkaApis.build_response``.

    python -m bench.quota_overhead [--n 20000] [--rounds 5]

Runs ApiVersions v3 and Produce v9 (acks=1, one 100-byte record) through
``KafkaApis.build_response`` on this thread, no network, and reports the
median over rounds of thread CPU µs per request:

* ``off``: no quota set (the default; the only cost is one attribute test);
* ``on, unlimited``: a quota exists for another client-id, so every request
  is recorded (request-time sensor, and produce bytes) but never throttled.

Run the same script against an older checkout (PYTHONPATH) for the
before-quotas figure; it only needs ``KafkaApis``.  ``--same-table`` leaves
DescribeClientQuotas/AlterClientQuotas out of the dispatch table, so that
ApiVersions answers the same list as before them (a longer answer costs more
to encode, which is not the quota check's cost).
"""

from __future__ import annotations

import argparse
import statistics
import time

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import Request, RequestChannel
from kafka_net.protocol import encode_request
from kafka_net.protocol.records import build_batch
from kafka_net.server.apis import KafkaApis
from kafka_net.server.metadata_cache import MetadataCache

API_VERSIONS = (18, 3, {"client_software_name": "bench", "client_software_version": "1"})


def produce_case(topic: str):
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": 0, "records": build_batch([(None, b"v" * 100)])}]}]}
    return 0, 9, body


def make_request(apis: KafkaApis, case) -> Request:
    # Built by hand, not with BrokerCore.request_from_frame or Request.from_parsed:
    # this script also runs against checkouts older than both (see the docstring).
    key, version, body = case
    parsed = apis.parse_request(encode_request(key, version, 1, body, client_id="bench")[4:])
    return Request(0, "conn", "PLAINTEXT", ("127.0.0.1", 1), parsed.header, parsed.body,
                   parsed.body_size)


def cpu_us_per_call(apis: KafkaApis, request: Request, n: int) -> float:
    build = apis.build_response
    start = time.thread_time_ns()
    for _ in range(n):
        request.request_dequeue_time_ns = time.monotonic_ns()
        build(request)
    return (time.thread_time_ns() - start) / n / 1000


def setup(quotas_on: bool, same_table: bool) -> KafkaApis:
    apis = KafkaApis(ServerConfig(), MetadataCache(1, "bench"), RequestChannel(10))
    if same_table:
        apis.set_handlers({k: m for k, m in apis.handlers.items() if k not in (48, 49)})
    apis.create_topic("bench", 1)
    if quotas_on:
        apis.quotas.client_quotas.alter([{
            "entity": [{"entity_type": "client-id", "entity_name": "someone-else"}],
            "ops": [{"key": k, "value": 1000.0, "remove": False}
                    for k in ("producer_byte_rate", "request_percentage")]}], False)
        assert apis.quotas.enabled
    return apis


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quota_overhead")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--same-table", action="store_true")
    args = parser.parse_args()
    modes = [("off", False)]
    if hasattr(KafkaApis(ServerConfig(), MetadataCache(1, "x")), "quotas"):
        modes.append(("on, unlimited", True))
    print("| case | quotas | CPU µs/request (median) | rounds |")
    print("| --- | --- | ---: | --- |")
    for name, case in (("ApiVersions v3", API_VERSIONS), ("Produce v9", produce_case("bench"))):
        for mode, on in modes:
            runs = []
            for _ in range(args.rounds):
                apis = setup(on, args.same_table)
                request = make_request(apis, case)
                cpu_us_per_call(apis, request, args.n // 10)   # warm-up
                runs.append(cpu_us_per_call(apis, request, args.n))
            print(f"| {name} | {mode} | {statistics.median(runs):.2f} | "
                  + ", ".join(f"{r:.2f}" for r in runs) + " |")


if __name__ == "__main__":
    main()
