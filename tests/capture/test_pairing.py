"""Pairing requests with responses on one connection (kafka_net.capture.pairing).

A longer synthetic conversation, pipelined and over several APIs (with a
Produce acks=0 that is correctly never answered), is clean; then each kind
of violation is injected at a known place and must be reported exactly once,
with the right check, position and correlation id, and nothing else
reported.  A Hypothesis test checks that any interleaving a correct broker
could produce (per-direction order kept, every response after its request)
is clean.
"""

from __future__ import annotations

import struct
import types
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.capture.format import decode_segment
from kafka_net.capture.pairing import (
    CHECKS, CLOSE, GAP, REQUEST, RESPONSE, SYNC, Frame, pair_connection)
from kafka_net.capture.pairing_checks import HEADER_ONLY
from kafka_net.protocol import ApiKey, encode_request, encode_response
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records.building import build_batch
from kafka_net.protocol.schema import Versions
from kafka_net.server.handlers import api_versions
from tests.support import RawClient, make_config, running_server

PRODUCE_DATA = [{"name": "orders", "partition_data": [{"index": 0, "records": None}]}]
METADATA_RESPONSE = {
    "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
    "cluster_id": "kafka-net-cluster", "controller_id": 1,
    "topics": [{"error_code": 0, "name": "orders", "partitions": [
        {"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1],
         "isr_nodes": [1]}]}],
}
API_VERSIONS_RESPONSE = {"api_keys": [
    {"api_key": k, "min_version": 0, "max_version": v}
    for k, v in [(0, 11), (1, 17), (2, 10), (3, 12), (10, 6), (12, 4), (18, 4)]]}


def req(api_key: int, version: int, corr: int, body: dict | None = None,
        client_id: str | None = "tester") -> bytes:
    return encode_request(api_key, version, corr, body or {}, client_id=client_id)[4:]


def resp(api_key: int, version: int, corr: int, body: dict | None = None) -> bytes:
    return encode_response(api_key, version, corr, body or {})[4:]


# The clean conversation: (name, direction, payload).  Requests are "q<corr>",
# responses "r<corr>".  Pipelining: 2 and 3 are both in flight, then 4..7;
# 4 is a Produce with acks=0, which the broker must not answer.
CALLS = {  # corr -> (api key, version, request body, response body)
    1: (ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"},
        API_VERSIONS_RESPONSE),
    2: (ApiKey.METADATA, 12, {"topics": None}, METADATA_RESPONSE),
    3: (ApiKey.METADATA, 1, {"topics": []}, METADATA_RESPONSE),
    4: (ApiKey.PRODUCE, 9, {"acks": 0, "timeout_ms": 1000, "topic_data": PRODUCE_DATA},
        {"responses": []}),
    5: (ApiKey.PRODUCE, 9, {"acks": 1, "timeout_ms": 1000, "topic_data": PRODUCE_DATA},
        {"responses": [{"name": "orders", "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": 0}]}]}),
    6: (ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]},
        {"coordinators": [{"key": "g", "node_id": 1, "host": "127.0.0.1", "port": 9092,
                           "error_code": 0, "error_message": None}]}),
    7: (ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "topics": []}, {"topics": []}),
    8: (ApiKey.FETCH, 12, {"max_wait_ms": 500, "topics": []}, {"responses": []}),
    9: (ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"},
        {"error_code": 0}),
    10: (ApiKey.METADATA, 12, {"topics": None}, METADATA_RESPONSE),
}
ORDER = ["q1", "r1", "q2", "q3", "r2", "r3", "q4", "q5", "q6", "q7", "r5", "r6", "r7",
         "q8", "r8", "q9", "r9", "q10", "r10"]


def payload(name: str, corr: int | None = None) -> bytes:
    """The bytes of request/response ``name``; ``corr`` overrides its id."""
    c = int(name[1:])
    api_key, version, rq, rs = CALLS[c]
    corr = c if corr is None else corr
    return req(api_key, version, corr, rq) if name[0] == "q" else resp(api_key, version, corr, rs)


def conversation(order=ORDER) -> list[tuple[str, int, bytes]]:
    return [(n, REQUEST if n[0] == "q" else RESPONSE, payload(n)) for n in order]


def frames_of(convo, truncated=(), gap_at: int | None = None) -> list[Frame]:
    return [Frame(i, d, 1_000_000 * (i + 1), p, len(p), truncated=i in truncated,
                  after_gap=gap_at == i, marker=CLOSE if n == "fin" else None)
            for i, (n, d, p) in enumerate(convo)]


def found(report) -> list[tuple[str, int, int]]:
    return [(v.check, v.position, v.correlation_id) for v in report.violations]


def index(convo, name: str) -> int:
    return [n for n, _, _ in convo].index(name)


def check(convo, **kw):
    return pair_connection(frames_of(convo, **kw))


# -- the clean conversation ----------------------------------------------------------------

def test_clean_conversation_has_no_violations():
    convo = conversation()
    report = check(convo)
    assert report.violations == []
    answered = [c for c in CALLS if c != 4]
    assert [p.correlation_id for p in report.pairs] == answered
    assert report.acks0_requests == 1
    assert report.in_flight_at_end == 0
    assert report.unverifiable_from is None
    assert len(report.requests) == len(CALLS)
    for p in report.pairs:
        assert p.request_position == index(convo, f"q{p.correlation_id}")
        assert p.response_position == index(convo, f"r{p.correlation_id}")
        assert p.latency_ns == 1_000_000 * (p.response_position - p.request_position)
        api_key, version, _, _ = CALLS[p.correlation_id]
        assert (p.api_key, p.api_version, p.client_id) == (api_key, version, "tester")


def test_every_check_named_in_checks_is_one_this_suite_injects():
    assert set(CHECKS) == set(INJECTIONS)


# -- each violation, injected once ---------------------------------------------------------

def swapped():
    """r6 overtakes r5: the broker answered out of order."""
    convo = conversation()
    i, j = index(convo, "r5"), index(convo, "r6")
    convo[i], convo[j] = convo[j], convo[i]
    return convo, [("correlation_mismatch", i, 6)]


def dropped():
    """r5 never comes, while r6 and r7 do: q5 was skipped."""
    convo = conversation()
    del convo[index(convo, "r5")]
    return convo, [("unanswered_request", index(convo, "q5"), 5)]


def unknown_response():
    convo = conversation()
    at = index(convo, "r6") + 1
    convo.insert(at, ("r?", RESPONSE, resp(ApiKey.METADATA, 12, 999, METADATA_RESPONSE)))
    return convo, [("response_without_request", at, 999)]


def repeated_response():
    convo = conversation()
    at = index(convo, "r6") + 1
    convo.insert(at, ("r5 again", RESPONSE, payload("r5")))
    return convo, [("duplicate_response", at, 5)]


def acks0_answered():
    convo = conversation()
    at = index(convo, "r5")
    convo.insert(at, ("r4", RESPONSE, payload("r4")))
    return convo, [("acks0_answered", at, 4)]


def duplicate_in_flight():
    """q6 reuses id 5 while q5 still waits; the broker answers both, in order."""
    convo = conversation()
    q6, r6 = index(convo, "q6"), index(convo, "r6")
    convo[q6] = ("q6 as 5", REQUEST, payload("q6", corr=5))
    convo[r6] = ("r6 as 5", RESPONSE, payload("r6", corr=5))
    return convo, [("duplicate_correlation_id_in_flight", q6, 5)]


def response_first():
    """r9 is on record before q9 (e.g. clocks or capture order went wrong)."""
    convo = conversation()
    q9, r9 = index(convo, "q9"), index(convo, "r9")
    convo[q9], convo[r9] = convo[r9], convo[q9]
    return convo, [("response_before_request", q9, 9)]


def corrupt_request_header():
    """q7's client_id length points far past the frame (a header v2 request)."""
    convo = conversation()
    at = index(convo, "q7")
    data = bytearray(convo[at][2])
    data[8:10] = struct.pack(">h", 0x7FFF)
    convo[at] = ("q7 corrupt", REQUEST, bytes(data))
    return convo, [("undecodable_request", at, 7)]


def corrupt_response_body():
    """r2 cut in half, but not marked as truncated by the capture."""
    convo = conversation()
    at = index(convo, "r2")
    data = convo[at][2]
    convo[at] = ("r2 cut", RESPONSE, data[:len(data) // 2])
    return convo, [("undecodable_response", at, 2)]


def trailing_response_bytes():
    """Eight bytes after r3's valid body."""
    convo = conversation()
    at = index(convo, "r3")
    convo[at] = ("r3 + 8", RESPONSE, convo[at][2] + b"\0" * 8)
    return convo, [("trailing_bytes", at, 3)]


def flipped_record_byte():
    """q5 carries a record batch with one byte flipped inside its records: the CRC
    no longer matches, as LogValidator would find."""
    convo = conversation()
    at = index(convo, "q5")
    batch = bytearray(build_batch([(b"k", b"value-" * 10)]))
    batch[-5] ^= 0x40
    data = [{"name": "orders", "partition_data": [{"index": 0, "records": bytes(batch)}]}]
    body = {"acks": 1, "timeout_ms": 1000, "topic_data": data}
    convo[at] = ("q5 flipped", REQUEST, req(ApiKey.PRODUCE, 9, 5, body))
    return convo, [("corrupt_records", at, 5)]


def closed_unanswered():
    """r10 never comes and the client closes the connection (FIN)."""
    convo = conversation()
    del convo[index(convo, "r10")]
    convo.append(("fin", REQUEST, b""))
    return convo, [("unanswered_before_close", index(convo, "q10"), 10)]


def _advertising(metadata_min: int):
    """r1, advertising Metadata from ``metadata_min`` on."""
    body = {"api_keys": [dict(k, min_version=metadata_min) if k["api_key"] == ApiKey.METADATA
                         else k for k in API_VERSIONS_RESPONSE["api_keys"]]}
    return ("r1 narrowed", RESPONSE, resp(ApiKey.API_VERSIONS, 3, 1, body))


def unadvertised_served():
    """The broker advertises Metadata v4+ and then answers q3 (Metadata v1) as usual:
    the client's request and the broker's answer are each a finding."""
    convo = conversation()
    convo[index(convo, "r1")] = _advertising(4)
    return convo, [("unadvertised_version", index(convo, "q3"), 3),
                   ("unadvertised_version_served", index(convo, "r3"), 3)]


INJECTIONS = {
    "unadvertised_version": unadvertised_served,
    "unadvertised_version_served": lambda: _served_first(unadvertised_served()),
    "trailing_bytes": trailing_response_bytes,
    "corrupt_records": flipped_record_byte,
    "unanswered_before_close": closed_unanswered,
    "correlation_mismatch": swapped,
    "unanswered_request": dropped,
    "response_without_request": unknown_response,
    "duplicate_response": repeated_response,
    "acks0_answered": acks0_answered,
    "duplicate_correlation_id_in_flight": duplicate_in_flight,
    "response_before_request": response_first,
    "undecodable_request": corrupt_request_header,
    "undecodable_response": corrupt_response_body,
}


def _served_first(case):
    convo, expected = case
    return convo, sorted(expected, key=lambda e: e[0] != "unadvertised_version_served")


@pytest.mark.parametrize("check_name", sorted(INJECTIONS))
def test_each_violation_is_reported_exactly_once(check_name):
    convo, expected = INJECTIONS[check_name]()
    assert expected[0][0] == check_name
    report = check(convo)
    assert sorted(found(report)) == sorted(expected)
    v = next(v for v in report.violations if v.check == check_name)
    assert v.timestamp_ns == 1_000_000 * (v.position + 1)
    assert v.detail


def test_the_response_overtaking_two_requests_is_blamed_once():
    """r7 overtakes both q5 and q6, which are answered later."""
    convo = conversation()
    r7 = index(convo, "r7")
    moved = convo.pop(r7)
    at = index(convo, "r5")
    convo.insert(at, moved)
    report = check(convo)
    assert found(report) == [("correlation_mismatch", at, 7)]
    assert len(report.pairs) == len(CALLS) - 1


def test_two_dropped_responses_are_two_unanswered_requests():
    convo = conversation()
    del convo[index(convo, "r5")]
    del convo[index(convo, "r6")]
    report = check(convo)
    assert found(report) == [("unanswered_request", index(convo, "q5"), 5),
                             ("unanswered_request", index(convo, "q6"), 6)]


def test_requests_waiting_at_the_end_are_in_flight_not_violations():
    """The capture stopped (or the client left) before the last answers."""
    convo = conversation()[:index(conversation(), "r10")]
    report = check(convo)
    assert report.violations == [] and report.in_flight_at_end == 1


def test_api_versions_response_with_a_v1_header_is_undecodable():
    """KIP-511: ApiVersions responses always use header v0, even for the flexible
    v3; a tagged-field byte after the correlation id breaks the body."""
    convo = conversation()
    at = index(convo, "r1")
    data = convo[at][2]
    convo[at] = ("r1 header v1", RESPONSE, data[:4] + b"\x00" + data[4:])
    assert found(check(convo)) == [("undecodable_response", at, 1)]


def test_flexible_response_without_its_tagged_fields_is_undecodable():
    """The converse rule: Metadata v12 needs header v1; a v0 header is a violation."""
    convo = conversation()
    at = index(convo, "r10")
    data = convo[at][2]
    assert data[4] == 0   # the empty tagged-field section of header v1
    convo[at] = ("r10 header v0", RESPONSE, data[:4] + data[5:])
    assert found(check(convo)) == [("undecodable_response", at, 10)]


def test_response_cut_by_the_capture_is_not_a_violation():
    convo, _ = corrupt_response_body()
    at = index(convo, "r2 cut")
    report = check(convo, truncated={at})
    assert report.violations == []
    assert any(p.correlation_id == 2 for p in report.pairs)


def test_request_cut_by_the_capture_is_not_a_violation():
    convo = conversation()
    at = index(convo, "q5")
    data = convo[at][2]
    convo[at] = ("q5 cut", REQUEST, data[:30])
    assert check(convo, truncated={at}).violations == []


def test_request_cut_inside_its_header_by_the_capture_is_not_a_violation():
    """capture.max.frame.bytes may be tiny (its minimum is 0): a request whose
    header was cut by the capture is not the client's fault.  The first eight
    bytes still give its id, so its response still pairs."""
    convo = conversation()
    at = index(convo, "q5")
    convo[at] = ("q5 cut in header", REQUEST, convo[at][2][:12])
    report = check(convo, truncated={at})
    assert report.violations == []
    assert any(p.correlation_id == 5 for p in report.pairs)


def test_stray_early_copy_of_a_later_response():
    """A copy of r10 shows up before q10; the real r10 then follows q10.  The
    early copy is the defect (response_before_request); the real r10 answers a
    request that was already answered by the copy, so it is a duplicate_response,
    not a response without a request."""
    convo = conversation()
    at = index(convo, "r6") + 1
    convo.insert(at, ("stray r10", RESPONSE, payload("r10")))
    report = check(convo)
    assert found(report) == [("response_before_request", at, 10),
                             ("duplicate_response", index(convo, "r10"), 10)]


def test_request_too_short_for_a_header():
    convo = conversation()
    convo.append(("stub", REQUEST, b"\x00\x03\x00"))
    report = check(convo)
    assert found(report) == [("undecodable_request", len(convo) - 1, -1)]


def test_request_with_an_unknown_api_key():
    convo = conversation()
    at = index(convo, "q10")
    data = bytearray(convo[at][2])
    data[0:2] = struct.pack(">h", 4242)
    convo[at] = ("q10 unknown api", REQUEST, bytes(data))
    report = check(convo)
    # Its id is known, so its response still pairs: one violation, at the request.
    assert found(report) == [("undecodable_request", at, 10)]


def test_request_body_that_does_not_decode():
    convo = conversation()
    at = index(convo, "q8")
    data = convo[at][2]
    convo[at] = ("q8 cut", REQUEST, data[:len(data) - 6])
    assert found(check(convo)) == [("undecodable_request", at, 8)]


def test_response_too_short_for_a_correlation_id():
    convo = conversation()
    at = index(convo, "r10")
    convo.insert(at, ("stub", RESPONSE, b"\x00\x00"))
    assert found(check(convo)) == [("undecodable_response", at, -1)]


def test_several_injections_in_one_conversation_are_each_reported_once():
    """Disjoint defects far apart do not hide or double each other."""
    convo = conversation()
    i, j = index(convo, "r2"), index(convo, "r3")
    convo[i], convo[j] = convo[j], convo[i]                   # mismatch at i (r3 first)
    del convo[index(convo, "r7")]                             # q7 skipped (r8 answered)
    at_dup = index(convo, "r9") + 1
    convo.insert(at_dup, ("r9 again", RESPONSE, payload("r9")))
    report = check(convo)
    assert found(report) == [("correlation_mismatch", i, 3),
                             ("unanswered_request", index(convo, "q7"), 7),
                             ("duplicate_response", at_dup, 9)]


# -- gaps ------------------------------------------------------------------------------------

def with_gap(convo, direction: int, replaced: list[str]):
    """``replaced`` frames lost from the capture: one gap marker where they were."""
    at = index(convo, replaced[0])
    for name in replaced:
        del convo[index(convo, name)]
    convo.insert(at, ("gap", direction, b""))
    return convo


def frames_with_markers(convo) -> list[Frame]:
    return [Frame(i, d, 1_000_000 * (i + 1), p, len(p),
                  marker=GAP if n == "gap" else CLOSE if n == "fin" else None,
                  gap=(100 * i, 100 * i + 50) if n == "gap" else None)
            for i, (n, d, p) in enumerate(convo)]


def test_requests_whose_answers_fell_into_a_gap_are_unverifiable_not_violations():
    """r5 and r6 were lost (q7 is then answered): q5, q6 unverifiable; the rest
    paired and checked, nothing in flight."""
    convo = with_gap(conversation(), RESPONSE, ["r5", "r6"])
    report = pair_connection(frames_with_markers(convo))
    assert report.violations == [] and report.in_flight_at_end == 0
    assert report.unverifiable_requests == 2
    assert {p.correlation_id for p in report.pairs} == {1, 2, 3, 7, 8, 9, 10}
    states = report.states
    assert states[index(convo, "q5")].state == "unverifiable"
    assert states[index(convo, "q5")].gap == (100 * index(convo, "gap"),
                                              100 * index(convo, "gap") + 50)
    assert states[index(convo, "q7")].state == "checked"
    assert report.unverifiable_from == index(convo, "gap")


def test_a_lost_request_makes_its_answer_unverifiable_not_a_violation():
    convo = with_gap(conversation(), REQUEST, ["q8"])
    report = pair_connection(frames_with_markers(convo))
    assert report.violations == []
    assert report.states[index(convo, "r8")].state == "unverifiable"
    assert {p.correlation_id for p in report.pairs} == {1, 2, 3, 5, 6, 7, 9, 10}


def test_a_lost_last_response_is_unverifiable_not_in_flight_nor_unanswered():
    convo = with_gap(conversation(), RESPONSE, ["r10"])
    convo.append(("fin", REQUEST, b""))
    report = pair_connection(frames_with_markers(convo))
    assert report.violations == [] and report.in_flight_at_end == 0
    assert report.unverifiable_requests == 1


def test_an_unadvertised_version_read_before_framing_is_confirmed_is_not_a_finding():
    """The same unadvertised Metadata v1 (q3) as in unadvertised_served, but read
    just after lost request bytes, and cut by the snap length (no whole body to
    confirm the boundary): perhaps no request at all.  Once a request decodes
    whole the check is back (q4's version is advertised: nothing to find)."""
    convo, _ = unadvertised_served()
    convo.insert(index(convo, "q3"), ("gap", REQUEST, b""))
    frames = frames_with_markers(convo)
    at = index(convo, "q3")
    frames[at] = replace(frames[at], frame=frames[at].frame[:12], truncated=True)
    report = pair_connection(frames)
    assert found(report) == []
    assert report.states[at].state == HEADER_ONLY
    assert [p.correlation_id for p in report.pairs][:3] == [1, 2, 3]


def test_violations_before_and_after_a_gap_are_reported():
    convo, expected = swapped()
    convo = with_gap(convo, REQUEST, ["q8", "r8"])
    at = index(convo, "r9")
    convo.insert(at + 1, ("r9 again", RESPONSE, payload("r9")))
    report = pair_connection(frames_with_markers(convo))
    assert found(report) == expected + [("duplicate_response", at + 1, 9)]


def test_a_boundary_found_mid_stream_is_suspect_until_a_request_decodes():
    """A SYNC marker (the capture started mid-stream, the first boundary found by
    searching): a request that does not decode, or repeats an id, before one
    decodes whole is unverifiable; after a whole one, the same faults are
    violations."""
    bad = req(ApiKey.METADATA, 12, 5, {"topics": None})[:-3]   # body cut short
    good = req(ApiKey.METADATA, 12, 6, {"topics": None})
    frames = [Frame(0, REQUEST, 1, b"", 0, gap=(0, 40), marker=SYNC),
              Frame(1, REQUEST, 2, bad, len(bad)), Frame(2, REQUEST, 3, bad, len(bad)),
              Frame(3, REQUEST, 4, good, len(good)), Frame(4, REQUEST, 5, bad, len(bad))]
    report = pair_connection(frames)
    assert [(v.check, v.position) for v in report.violations] == [
        ("duplicate_correlation_id_in_flight", 4), ("undecodable_request", 4)]
    assert {p: (s.state, s.reason[:60]) for p, s in report.states.items() if p < 3} == {
        p: ("unverifiable", "framing not yet confirmed after a search for the first frame")
        for p in (1, 2)}
    assert report.unverifiable_from is None    # nothing was lost


# -- versions beyond the schema ------------------------------------------------------------

def test_too_new_api_versions_request_answered_at_v0_is_clean():
    """KIP-511: a broker answers an ApiVersions version it does not know with a v0
    UNSUPPORTED_VERSION body; that is correct, and the error code is recorded."""
    header = struct.pack(">hhi", ApiKey.API_VERSIONS, 9, 1) + struct.pack(">h", 1) + b"c" + b"\x00"
    body = b"\x02x\x021\x00"  # compact strings, empty tagged fields
    response = resp(ApiKey.API_VERSIONS, 0, 1, {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    report = pair_connection([Frame(0, REQUEST, 1, header + body, 0),
                              Frame(1, RESPONSE, 2, response, 0)])
    assert report.violations == []
    assert report.pairs[0].error_codes == (ErrorCode.UNSUPPORTED_VERSION,)


def test_api_versions_fallback_to_a_v0_body_is_clean():
    """KIP-511 from the other side: a broker that serves ApiVersions only up to
    v2 (Kafka 2.x serves 0-3) answers a v4 request with a v0 body holding
    UNSUPPORTED_VERSION; clients parse it as v0.  That is correct behaviour,
    even though v4 is a version our schema knows."""
    q = req(ApiKey.API_VERSIONS, 4, 1, {"client_software_name": "kafka-python",
                                        "client_software_version": "3.0.12"})
    r = resp(ApiKey.API_VERSIONS, 0, 1, {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]})
    report = pair_connection([Frame(0, REQUEST, 1, q, len(q)), Frame(1, RESPONSE, 2, r, len(r))])
    assert report.violations == []
    assert report.pairs[0].error_codes == (ErrorCode.UNSUPPORTED_VERSION,)


def test_live_api_versions_fallback_is_clean(tmp_path):
    """The same, captured from a kafka-net broker whose ApiVersions stops at v2."""
    capped = types.SimpleNamespace(API_KEY=api_versions.API_KEY, VERSIONS=Versions(0, 2),
                                   handle=api_versions.handle,
                                   error_response=api_versions.error_response)
    cap = tmp_path / "cap"
    config = make_config(capture_dir=str(cap), num_network_threads=1)
    with running_server(config, apis_handlers={ApiKey.API_VERSIONS: capped}) as server:
        with RawClient(server.bound_port()) as client:
            client.send(ApiKey.API_VERSIONS, 4, {"client_software_name": "x",
                                                 "client_software_version": "1"})
            client.recv_frame()
            client.call(ApiKey.API_VERSIONS, 2, {})
    records = []
    for path in sorted(cap.iterdir()):
        records += decode_segment(path.read_bytes()).records
    assert len(records) == 4
    report = pair_connection([Frame(i, r.direction, r.timestamp_ns, r.frame, r.frame_size)
                              for i, r in enumerate(records)])
    assert report.violations == []
    assert len(report.pairs) == 2
    assert report.pairs[0].error_codes == (ErrorCode.UNSUPPORTED_VERSION,)


def test_acks0_produce_newer_than_the_schema_is_recognised():
    """Produce v12 (beyond our schema) with acks=0: unanswered, and not a violation."""
    data = bytearray(req(ApiKey.PRODUCE, 11, 1, {"acks": 0, "topic_data": PRODUCE_DATA}))
    data[2:4] = struct.pack(">h", 12)
    meta = req(ApiKey.METADATA, 12, 2)
    report = pair_connection([Frame(0, REQUEST, 1, bytes(data), 0),
                              Frame(1, REQUEST, 2, meta, 0),
                              Frame(2, RESPONSE, 3, resp(ApiKey.METADATA, 12, 2), 0)])
    assert report.violations == [] and report.acks0_requests == 1
    assert report.in_flight_at_end == 0


def test_error_codes_of_a_response_are_collected():
    body = {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER},
        {"index": 1, "error_code": 0}]}]}
    report = pair_connection([
        Frame(0, REQUEST, 1, req(ApiKey.PRODUCE, 9, 3, {"acks": -1}), 0),
        Frame(1, RESPONSE, 2, resp(ApiKey.PRODUCE, 9, 3, body), 0)])
    assert report.violations == []
    assert report.pairs[0].error_codes == (ErrorCode.NOT_LEADER_OR_FOLLOWER,)


# -- any correct interleaving is clean ---------------------------------------------------------

POOL = [c for c in CALLS]   # the calls above, reused with fresh correlation ids


@st.composite
def correct_conversations(draw):
    kinds = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=25))
    ids = draw(st.lists(st.integers(-2**31, 2**31 - 1), min_size=len(kinds),
                        max_size=len(kinds), unique=True))
    requests, responses = [], []
    for kind, corr in zip(kinds, ids):
        api_key, version, rq, rs = CALLS[kind]
        requests.append((corr, req(api_key, version, corr, rq)))
        if kind != 4:   # the acks=0 Produce
            responses.append((corr, resp(api_key, version, corr, rs)))
    # Interleave: requests in order, responses in order, each after its request.
    out, sent, answered = [], 0, 0
    request_index = {corr: i for i, (corr, _) in enumerate(requests)}
    while sent < len(requests) or answered < len(responses):
        can_answer = (answered < len(responses)
                      and request_index[responses[answered][0]] < sent)
        if sent < len(requests) and (not can_answer or draw(st.booleans())):
            out.append((REQUEST, requests[sent][1]))
            sent += 1
        else:
            out.append((RESPONSE, responses[answered][1]))
            answered += 1
    return out, [c for c, _ in responses]


@settings(max_examples=150, deadline=None)
@given(correct_conversations())
def test_any_correct_interleaving_has_no_violations(case):
    frames, answered_ids = case
    report = pair_connection([Frame(i, d, i, p, len(p)) for i, (d, p) in enumerate(frames)])
    assert report.violations == []
    assert [p.correlation_id for p in report.pairs] == answered_ids
    assert report.in_flight_at_end == 0


# -- coverage states ---------------------------------------------------------------------------

def test_every_frame_ends_in_one_coverage_state_with_its_reason():
    """Checked in full; header only for an API without a schema, a version beyond
    the schema and a frame the capture cut; not Kafka for a frame too short."""
    # Key 94: no API Kafka 4.4 defines, so the codec has no schema for it (every key
    # 0-93 has one, the inter-broker ones included).
    no_schema = struct.pack(">hhi", 94, 0, 20) + b"\x00\x01c\x00" + b"x" * 9
    too_new = struct.pack(">hhi", ApiKey.METADATA, 99, 21) + b"\x00\x01c\x00" + b"y" * 9
    cut = payload("q2", corr=22)[:20]
    frames = [
        Frame(0, REQUEST, 1, payload("q1"), 0),
        Frame(1, RESPONSE, 2, payload("r1"), 0),
        Frame(2, REQUEST, 3, no_schema, 0),
        Frame(3, RESPONSE, 4, struct.pack(">i", 20) + b"\x00" * 6, 0),
        Frame(4, REQUEST, 5, too_new, 0),
        Frame(5, RESPONSE, 6, struct.pack(">i", 21) + b"\x00" * 6, 0),
        Frame(6, REQUEST, 7, cut, 100, truncated=True),
        Frame(7, RESPONSE, 8, payload("r2", corr=22)[:10], 100, truncated=True),
    ]
    report = pair_connection(frames)
    # Key 94 is no Kafka API at all (Kafka closes the connection: "Unexpected api
    # key"); Metadata v99 was not advertised in r1: the client's deviation (whether
    # the broker refused it is not known: header only).
    assert found(report) == [("undecodable_request", 2, 20), ("unadvertised_version", 4, 21)]
    assert "unknown api key 94" in report.violations[0].detail
    assert "whether it refused is not known" in report.violations[1].detail
    assert len(report.pairs) == 4
    got = [(s.state, s.reason) for _, s in sorted(report.states.items())]
    assert got == [("checked", ""), ("checked", ""),
                   ("header_only", "unknown API (no schema)"),
                   ("header_only", "unknown API (no schema)"),
                   ("header_only", "unknown version"), ("header_only", "unknown version"),
                   ("header_only", "truncated by capture length"),
                   ("header_only", "truncated by capture length")]
    assert report.pairs[2].client_id == "c"      # the lenient reader, for any version
    assert report.state_counts() == {"checked": 2, "header_only": 6, "unverifiable": 0,
                                     "not_kafka": 0}


def test_client_facing_apis_the_broker_does_not_serve_are_checked_in_full():
    """The codec has schemas for every API clients send (issue 12), served or not:
    an admin client's ACL, log-dir and token calls and a client's telemetry push
    are checked, not header only."""
    calls = [
        (ApiKey.DESCRIBE_ACLS, 3, {"resource_type_filter": 1, "resource_name_filter": None,
                                   "principal_filter": "User:alice", "operation": 1},
         {"error_code": 0, "error_message": None, "resources": [{
             "resource_type": 2, "resource_name": "orders", "pattern_type": 3,
             "acls": [{"principal": "User:alice", "host": "*", "operation": 3,
                       "permission_type": 3}]}]}),
        (ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None},
         {"error_code": 0, "results": [{"log_dir": "/data", "total_bytes": 10}]}),
        (ApiKey.CREATE_DELEGATION_TOKEN, 3, {"owner_principal_name": None, "max_lifetime_ms": -1},
         {"error_code": 0, "hmac": b"\x01\x02", "token_id": "t"}),
        (ApiKey.PUSH_TELEMETRY, 0, {"subscription_id": 7, "metrics": b"otlp"}, {"error_code": 0}),
    ]
    frames = []
    for corr, (key, version, rq, rs) in enumerate(calls, start=30):
        for direction, data in ((REQUEST, req(key, version, corr, rq)),
                                (RESPONSE, resp(key, version, corr, rs))):
            frames.append(Frame(len(frames), direction, len(frames) + 1, data, 0))
    report = pair_connection(frames)
    assert report.violations == [] and len(report.pairs) == len(calls)
    assert report.state_counts() == {"checked": 2 * len(calls), "header_only": 0,
                                     "unverifiable": 0, "not_kafka": 0}
    assert report.responses == 4


def test_responses_count_an_answered_acks0_produce():
    convo, _ = acks0_answered()
    report = check(convo)
    (q4,) = [r for r in report.requests if r.correlation_id == 4]
    assert q4.acks0 and q4.responses == 1
    assert report.responses == sum(1 for _, d, _ in convo if d == RESPONSE)


@pytest.mark.parametrize("fin_after_ms,expected", [(1, []), (600, ["unanswered_before_close"])])
def test_a_fetch_abandoned_within_its_max_wait_is_not_unanswered(fin_after_ms, expected):
    """A consumer closing while its long poll (max_wait_ms 500) is held: the broker
    still had time, so it is only in flight; past max_wait_ms it is a violation."""
    fetch = req(ApiKey.FETCH, 12, 1, {"max_wait_ms": 500, "topics": []})
    frames = [Frame(0, REQUEST, 10**9, fetch, 0),
              Frame(1, REQUEST, 10**9 + fin_after_ms * 10**6, b"", 0, marker=CLOSE)]
    report = pair_connection(frames)
    assert [v.check for v in report.violations] == expected
    assert report.in_flight_at_end == (0 if expected else 1)


@pytest.mark.parametrize("fin_after_ms,expected", [
    (1, []),                                   # the Fetch is rightly held: nothing
    (600, [("unanswered_before_close", 0)]),   # the Fetch overdue: it alone is blamed
])
def test_requests_behind_a_held_request_were_never_read(fin_after_ms, expected):
    """The muted-connection rule: a broker reads one request at a time per
    connection, so a Metadata and a Heartbeat sent behind a held Fetch were never
    read when the client closes 0.1-3.5 ms later: never unanswered_before_close,
    whether or not the Fetch itself is overdue."""
    t0 = 10**9
    fin = t0 + fin_after_ms * 10**6
    frames = [Frame(0, REQUEST, t0, req(ApiKey.FETCH, 12, 1, {"max_wait_ms": 500,
                                                            "topics": []}), 0),
              Frame(1, REQUEST, fin - 3_500_000, payload("q10"), 0),
              Frame(2, REQUEST, fin - 100_000, payload("q9"), 0),
              Frame(3, REQUEST, fin, b"", 0, marker=CLOSE)]
    report = pair_connection(frames)
    assert [(v.check, v.position) for v in report.violations] == expected
    assert report.in_flight_at_end == 3 - len(expected)


def test_an_answered_request_moves_the_read_position_on():
    """After the Fetch is answered the broker reads the next request: left without
    an answer at the client's FIN (no long poll), that one is unanswered."""
    t0 = 10**9
    fetch = req(ApiKey.FETCH, 12, 1, {"max_wait_ms": 500, "topics": []})
    frames = [Frame(0, REQUEST, t0, fetch, 0),
              Frame(1, REQUEST, t0 + 1_000_000, payload("q10"), 0),
              Frame(2, RESPONSE, t0 + 2_000_000, resp(ApiKey.FETCH, 12, 1,
                                                     {"responses": []}), 0),
              Frame(3, REQUEST, t0 + 900_000_000, b"", 0, marker=CLOSE)]
    report = pair_connection(frames)
    assert [(v.check, v.position, v.correlation_id) for v in report.violations] == [
        ("unanswered_before_close", 1, 10)]


def test_an_unadvertised_version_refused_is_the_clients_alone():
    """Answered with UNSUPPORTED_VERSION: the client's deviation, nothing of the broker's."""
    convo = conversation()
    convo[index(convo, "r1")] = _advertising(4)
    refusal = dict(METADATA_RESPONSE, topics=[{"error_code": 35, "name": "orders",
                                               "partitions": []}])
    convo[index(convo, "r3")] = ("r3 refused", RESPONSE,
                                 resp(ApiKey.METADATA, 1, 3, refusal))
    report = check(convo)
    assert found(report) == [("unadvertised_version", index(convo, "q3"), 3)]
    assert "refused it (UNSUPPORTED_VERSION)" in report.violations[0].detail


def test_an_unadvertised_version_left_unanswered_is_never_unanswered_before_close():
    """Kafka's broker refuses by closing the connection: the client's FIN follows,
    long after; only the client's deviation is reported."""
    convo = [("q1", REQUEST, payload("q1")), _advertising(4), ("q3", REQUEST, payload("q3"))]
    frames = frames_of(convo) + [Frame(3, REQUEST, 60 * 10**9, b"", 0, marker=CLOSE)]
    report = pair_connection(frames)
    assert found(report) == [("unadvertised_version", 2, 3)]
    assert "did not answer it" in report.violations[0].detail


# -- long pipelines (a client with hundreds of requests in flight) -----------------------------

def pipeline(ids: list[int], answers: list[int]) -> list[Frame]:
    """Heartbeat requests with ``ids`` all sent first, then responses for ``answers``."""
    api_key, version, rq, rs = CALLS[9]
    sent = [(REQUEST, req(api_key, version, c, rq)) for c in ids]
    answered = [(RESPONSE, resp(api_key, version, c, rs)) for c in answers]
    return [Frame(i, d, 1_000_000 * (i + 1), p, len(p))
            for i, (d, p) in enumerate(sent + answered)]


def test_an_id_repeated_deep_in_a_long_pipeline_is_still_found():
    """300 requests waiting, then one reusing the id of the 101st: found at the
    repeat; each is then answered in order, the repeat by the second answer."""
    ids = list(range(1000, 1300)) + [1100]
    report = pair_connection(pipeline(ids, ids))
    assert found(report) == [("duplicate_correlation_id_in_flight", 300, 1100)]
    assert [p.request_position for p in report.pairs] == list(range(301))
    assert report.in_flight_at_end == 0


def test_an_answer_overtaking_half_a_long_pipeline_is_blamed_once():
    """The 151st of 300 waiting requests answered first, then the others in order:
    one correlation_mismatch at the overtaking answer, every request paired."""
    ids = list(range(1000, 1300))
    report = pair_connection(pipeline(ids, [1150] + ids[:150] + ids[151:]))
    assert found(report) == [("correlation_mismatch", 300, 1150)]
    assert [p.request_position for p in report.pairs] == [150] + list(range(150)) + \
        list(range(151, 300))
    assert report.in_flight_at_end == 0
