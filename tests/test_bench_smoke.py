"""The benchmark tools behave: tiny bounded loads, checked for answers, never for time."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from bench.loadgen import LoadSpec, run_load
from bench.reference_server import ReferenceServer
from bench.run_all import api_versions_answer, begin_marker, end_marker, update_results
from tests.support import RawClient, running_server


@pytest.fixture
def reference():
    server = ReferenceServer()
    thread = threading.Thread(target=server.serve, name="reference-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(10)
        assert not thread.is_alive()


@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("api", ["apiversions", "metadata"])
def test_loadgen_against_reference_gets_every_answer(reference, workers, api):
    result = run_load(LoadSpec(port=reference.port, connections=2, depth=3, requests=20,
                               api=api, workers=workers, timeout=60))
    assert result.mismatches == 0
    assert result.errors == 0
    assert result.unanswered == 0 and result.disconnects == 0
    assert result.sent == result.received == result.requests == 40
    assert result.sampled >= 2          # each connection's first answer decoded in full
    assert result.ok


def test_loadgen_against_kafka_net_gets_every_answer():
    with running_server() as server:
        result = run_load(LoadSpec(port=server.bound_port(), connections=2, depth=2,
                                   requests=20, workers=0, timeout=60))
    assert result.ok and result.received == 40 and result.mismatches == 0


def test_reference_answers_like_kafka_net(reference):
    with running_server() as server:
        assert api_versions_answer(reference.port) == api_versions_answer(server.bound_port())


def test_reference_answers_pipelined_requests_in_order(reference):
    with RawClient(reference.port) as client:
        frames = b"".join(client.request_frame(18, 0, {}, correlation_id=cid)[1]
                          for cid in range(50, 60))
        client.send_raw(frames)
        assert [client.receive(18, 0)[0] for _ in range(10)] == list(range(50, 60))


def test_reference_closes_on_bad_frame_and_keeps_serving_others(reference):
    with RawClient(reference.port) as good:
        with socket.create_connection(("127.0.0.1", reference.port), timeout=10) as bad:
            bad.sendall(struct.pack(">i", -1))
            assert bad.recv(16) == b""          # closed by the server
        answer = good.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert answer["error_code"] == 0


def test_update_results_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "RESULTS.md"
    update_results(path, "a", "## A\nfirst\n")
    update_results(path, "b", "## B\nkept\n")
    update_results(path, "a", "## A\nsecond\n")
    text = path.read_text()
    assert "second" in text and "first" not in text and "kept" in text
    assert text.count(begin_marker("a")) == 1 and text.count(end_marker("a")) == 1
    assert text.index(begin_marker("a")) < text.index(begin_marker("b"))
