"""Strict per-connection response ordering under pipelining and randomly slow handlers.

Reference C8, D3, E3: a connection is muted after each request and unmuted only after its
response is written, so even with M handler threads finishing in random order, every
connection's responses leave in request order."""

from __future__ import annotations

import random
import threading

from kafka_net.protocol import encode_request
from kafka_net.server.handlers import api_versions, metadata
from tests.network.helpers import SlowHandler, api_versions_body, metadata_body
from tests.support import RawClient, make_config, running_server, wait_until

CONNECTIONS = 16
REQUESTS = 50


def _pipeline(port: int, index: int, results: dict, errors: list) -> None:
    rng = random.Random(index)
    try:
        with RawClient(port, timeout=30) as client:
            # Correlation ids are not consecutive and differ per connection, so a
            # response delivered to the wrong connection or out of order shows.
            ids = [index * 100_000 + i * 7 + rng.randrange(7) for i in range(REQUESTS)]
            plan = []
            for cid in ids:
                if rng.random() < 0.7:
                    version = rng.choice([0, 1, 2, 3, 4])
                    plan.append((18, version, encode_request(18, version, cid,
                                                             api_versions_body(version))))
                else:
                    version = rng.choice([0, 1, 9, 12])
                    plan.append((3, version, encode_request(3, version, cid,
                                                            metadata_body(version))))
            # Pipeline everything at once, in a few random bursts.
            stream = b"".join(frame for _, _, frame in plan)
            sender = threading.Thread(target=client.sock.sendall, args=(stream,))
            sender.start()
            got = []
            for api_key, version, _ in plan:
                cid, body = client.receive(api_key, version)
                got.append(cid)
                if api_key == 18:
                    assert body["error_code"] == 0
                else:
                    assert body["brokers"][0]["port"] == port
            sender.join(30)
            results[index] = (ids, got)
    except Exception as exc:  # reported by the main thread
        errors.append((index, repr(exc)))


def test_pipelined_responses_come_back_in_request_order():
    slow_versions = SlowHandler(api_versions, max_delay=0.005, seed=1)
    slow_metadata = SlowHandler(metadata, max_delay=0.005, seed=2)
    config = make_config(num_network_threads=3, num_io_threads=8)
    with running_server(config, apis_handlers={18: slow_versions, 3: slow_metadata}) as server:
        port = server.bound_port()
        results: dict = {}
        errors: list = []
        threads = [threading.Thread(target=_pipeline, args=(port, i, results, errors))
                   for i in range(CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not [t for t in threads if t.is_alive()], "a client is still waiting"
        assert errors == []
        assert sorted(results) == list(range(CONNECTIONS))
        for index, (sent, got) in results.items():
            assert got == sent, f"connection {index} out of order or missing"
        assert slow_versions.calls + slow_metadata.calls == CONNECTIONS * REQUESTS
        # Handlers really overlapped (more than one thread did work).
        assert sum(1 for h in server.handler_pool.handlers if h.handled) > 1


def test_one_request_in_flight_per_connection():
    """While a request of a connection is in a handler, its next pipelined request is not
    handed to any other handler thread."""
    gate = threading.Event()
    gated = SlowHandler(api_versions, gate=gate)
    with running_server(make_config(num_io_threads=4), apis_handlers={18: gated}) as server:
        with RawClient(server.bound_port()) as client:
            client.send_raw(b"".join(encode_request(18, 0, i, {}) for i in range(5)))
            assert wait_until(lambda: gated.started == 1, 5)
            # Give the server every chance (more than a 300 ms poll) to wrongly start
            # a second one; it must not.
            assert not wait_until(lambda: gated.started > 1, 0.6)
            assert server.request_channel.request_queue_size() == 0
            gate.set()
            client.sock.settimeout(10)
            assert [client.receive(18, 0)[0] for _ in range(5)] == list(range(5))
            assert gated.calls == 5
