"""Findings with known ground truth from one live session, seen twice: kafka-net's own
capture (.kncap) and tcpdump's pcap of the same conversation must give the same
findings, each attributed to its party (kafka_net/capture/attribution.py).

The session (one kafka-net broker, capture on, tcpdump on the loopback):

* confluent-kafka's AdminClient (librdkafka 2.16, constraints.txt) lists topics: its
  Metadata v12 request for all topics has 3 bytes after the body, ``01 00 00``:
  the client's known deviation (the catalogue's entry, matched by its bytes);
* a consumer-like connection whose Fetch the broker rightly holds (max_wait_ms
  5000), with two Metadata requests sent behind it and the client's FIN 0.1-3.5
  ms later: the broker never read them (the connection is muted), so nothing
  is unanswered_before_close (the pcap sees them; kafka-net's capture does not);
* four connections each sending one request at a version the broker did not
  advertise in its ApiVersions answer on that connection (three above the
  range, one below): four client deviations, none of the broker's (kafka-net
  closes the connection, as Kafka does).

Recall 100% and no false positive, in both captures.  Then a pcap of the same
session cut by ``tcpdump -s 96`` counts every frame (within 1%).
"""

from __future__ import annotations

import gc
import struct
import time
from collections import Counter
from pathlib import Path

import pytest

from kafka_net.capture.findings import locate_violations
from kafka_net.capture.pairing import pair_connection
from kafka_net.capture.reader import read_capture_file
from kafka_net.protocol import ApiKey, encode_request
from kafka_net.protocol.headers import peek_request_header, read_request_header
from kafka_net.protocol.messages import MESSAGES
from tests.capture.tcpdump import Tcpdump
from tests.support import LOOPBACK, RawClient, make_config, running_server

TOPIC = "held"
TRAILING_ID = "librdkafka-2.16.0-metadata-v12-trailing"


def _librdkafka_version() -> str:
    """The installed librdkafka's version, read from the client (constraints.txt pins
    it), so a client release moved on purpose does not need this file edited."""
    import confluent_kafka
    return confluent_kafka.libversion()[0]


def _api_versions(client: RawClient) -> dict[int, tuple[int, int]]:
    body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "live-findings",
                                                 "client_software_version": "1"})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}


def _at_version(api_key: int, version: int, corr: int) -> bytes:
    """A request of ``api_key`` whose header says ``version``: the body of the nearest
    version the codec has (the broker refuses on the header alone)."""
    valid = MESSAGES[api_key].request.valid
    near = version if version in valid else valid.high
    frame = bytearray(encode_request(api_key, near, corr, MESSAGES[api_key].request.defaults(),
                                     client_id="live-findings"))
    struct.pack_into(">h", frame, 6, version)
    return bytes(frame)


def unadvertised(port: int) -> set[tuple[int, int]]:
    """Four connections, one unadvertised request each; (client port, corr) of each."""
    sent = set()
    for api_key, above in [(ApiKey.METADATA, True), (ApiKey.PRODUCE, True),
                           (ApiKey.LIST_OFFSETS, True), (ApiKey.FETCH, False)]:
        client = RawClient(port)
        try:
            lo, hi = _api_versions(client)[api_key]
            version = hi + 1 if above else lo - 1
            assert version >= 0, (api_key, lo)
            client.send_raw(_at_version(api_key, version, 7))
            assert client.is_closed_by_server(10.0)      # Kafka's refusal
            sent.add((client.sock.getsockname()[1], 7))
        finally:
            client.sock.close()
    return sent


def _fetch_body(max_wait_ms: int) -> dict:
    body = MESSAGES[ApiKey.FETCH].request.defaults()
    body.update(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, rack_id="", topics=[{
                    "topic": TOPIC, "partitions": [{
                        "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                        "last_fetched_epoch": -1, "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20}]}], forgotten_topics_data=[])
    return body


def muted_close(port: int) -> tuple[int, list[int]]:
    """A held Fetch, two Metadata requests behind it, then the client closes (its
    FIN) within 3.5 ms of them, as a consumer does on shutdown.  The broker holds
    the Fetch (max_wait_ms 60 s, an empty log) until its own graceful stop, so the
    Metadata requests are never read.  Returns the client port and their ids."""
    client = RawClient(port)
    _api_versions(client)
    metadata = {"topics": None, "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
    client.send(ApiKey.FETCH, 12, _fetch_body(60_000), correlation_id=10)
    time.sleep(0.2)     # the broker has read the Fetch and holds it
    client.send(ApiKey.METADATA, 12, metadata, correlation_id=11)
    client.send(ApiKey.METADATA, 12, metadata, correlation_id=12)
    time.sleep(0.001)
    port_used = client.sock.getsockname()[1]
    client.sock.close()                                 # the client's FIN
    return port_used, [11, 12]


def create_topic(port: int) -> None:
    client = RawClient(port)
    try:
        body = client.call(ApiKey.CREATE_TOPICS, 4, {"topics": [{
            "name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}], "timeout_ms": 10_000, "validate_only": False})
        assert body["topics"][0]["error_code"] == 0, body
    finally:
        client.sock.close()


def list_topics_with_librdkafka(port: int) -> None:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": f"{LOOPBACK}:{port}", "log_level": 3})
    assert TOPIC in admin.list_topics(timeout=10).topics
    del admin
    gc.collect()        # rd_kafka_destroy: its connections close now


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    base = tmp_path_factory.mktemp("live-findings")
    config = make_config(capture_dir=str(base / "kncap"))
    dumps = {}
    with running_server(config) as server:
        port = server.bound_port()
        dumps = {"pcap": Tcpdump(base / "whole.pcap", port),
                 "snap96": Tcpdump(base / "snap96.pcap", port, snaplen=96)}
        try:
            for dump in dumps.values():
                dump.start()
            create_topic(port)
            list_topics_with_librdkafka(port)
            muted = muted_close(port)
            versions = unadvertised(port)
        finally:
            server.shutdown()
            for dump in dumps.values():
                dump.stop()
    return {"base": base, "muted": muted, "versions": versions,
            "kncap": sorted((base / "kncap").iterdir()),
            "pcap": [base / "whole.pcap"], "snap96": [base / "snap96.pcap"]}


def findings(paths: list[Path]) -> tuple[list[dict], dict, Counter]:
    """(finding rows, {client port: report}, coverage states) of capture files."""
    rows, reports, states = [], {}, Counter()
    for path in paths:
        capture = read_capture_file(path.read_bytes(), str(path))
        assert capture.kind is not None, capture.problems
        for conn in capture.connections:
            report = pair_connection(conn.frames)
            port = _client_port(conn.id)
            reports.setdefault(port, []).append(report)
            states.update(report.state_counts())
            rows += [dict(v, port=port) for v in locate_violations(conn.frames, report,
                                                                   conn.id)]
    return rows, reports, states


def _client_port(connection: str) -> int:
    # kafka-net: "<broker>:<port>-<client>:<port>-<processor>-<n>"; pcap: "<client>-<broker>"
    parts = connection.split("-")
    ends = [p for p in parts if ":" in p]
    return int(ends[1].rsplit(":", 1)[1] if len(parts) > 2 else ends[0].rsplit(":", 1)[1])


def all_topics_metadata(paths: list[Path]) -> set[tuple[int, int]]:
    """(client port, corr) of librdkafka's Metadata v12 / v13 requests for all topics
    (their topics array null: its compact length byte, right after the header, is 0)."""
    out = set()
    for path in paths:
        for conn in read_capture_file(path.read_bytes(), str(path)).connections:
            for f in conn.frames:
                if f.marker is not None or f.direction != 0 or len(f.frame) < 8:
                    continue
                key, version, corr = peek_request_header(f.frame)
                if key != ApiKey.METADATA or version not in (12, 13):
                    continue
                header, offset = read_request_header(f.frame, key, version, corr,
                                                     MESSAGES[key].request.flexible)
                if header.client_id == "rdkafka" and f.frame[offset] == 0:
                    out.add((_client_port(conn.id), corr))
    return out


def truth(session, paths) -> set[tuple]:
    """(client port, check, party, severity, corr, known deviation) of every finding."""
    expected = {(port, "unadvertised_version", "client", "deviation", corr, "")
                for port, corr in session["versions"]}
    expected |= {(port, "trailing_bytes", "client", "deviation", corr, TRAILING_ID)
                 for port, corr in all_topics_metadata(paths)}
    return expected


@pytest.mark.parametrize("source", ["kncap", "pcap"])
def test_findings_match_the_ground_truth(session, source):
    rows, reports, _ = findings(session[source])
    got = {(r["port"], r["check"], r["party"], r["severity"], r["correlation_id"],
            r["known_deviation"]) for r in rows}
    assert len(got) == len(rows)
    assert got == truth(session, session[source])     # recall 100%, no false positive
    assert len(session["versions"]) == 4
    trailing = [r for r in rows if r["check"] == "trailing_bytes"]
    assert trailing     # librdkafka asked for all topics (on each of its connections)
    for row in trailing:
        # KIP-511's name and version as the client declared them in ApiVersions:
        # confluent-kafka-python sends "<its version>-rdkafka-<librdkafka's>"
        # (2.16.2 sends only the major number of its own version: "2-rdkafka-...").
        name, _, version = row["client_software"].partition(" ")
        assert name == "confluent-kafka-python"
        assert version.endswith(f"-rdkafka-{_librdkafka_version()}")
        assert row["api_name"] == "Metadata" and row["api_version"] in (12, 13)
        assert row["hex_fault"].endswith("01 00 00")
    assert not [r for r in rows if r["party"] == "broker"]   # PASS for the broker


def test_requests_behind_a_held_fetch_are_never_unanswered(session):
    """One verdict from both captures: no finding on that connection."""
    port, unread = session["muted"]
    (own,) = findings(session["kncap"])[1][port]
    (wire,) = findings(session["pcap"])[1][port]
    assert own.violations == [] and wire.violations == []
    # kafka-net's capture never saw the unread requests (it records what the broker
    # reads); the pcap has them, unanswered, waiting when the client closed.
    assert [r.correlation_id for r in own.requests][-1] == 10
    assert [r.correlation_id for r in wire.requests][-3:] == [10, *unread]
    assert not any(r.answered for r in wire.requests if r.correlation_id in unread)
    # Before the muted-connection rule they were blamed on the broker:
    assert wire.in_flight_at_end >= len(unread)


def test_a_snaplen_cut_pcap_counts_every_frame(session):
    """tcpdump -s 96 on the loopback (30 bytes of TCP payload with timestamps):
    every frame of the whole pcap is still a frame, most of them header only."""
    _, _, whole = findings(session["pcap"])
    _, _, cut = findings(session["snap96"])
    total, got = sum(whole.values()), sum(cut.values())
    assert abs(got - total) <= 0.01 * total, (whole, cut)
    assert cut["header_only"] > 0.5 * total
