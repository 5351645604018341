"""kafka_net.capture.injected on made-up connections: which reaction each
sequence of requests after a fault reads as, and which findings it relabels."""

from __future__ import annotations

import json

from kafka_net.capture import injected
from kafka_net.capture.model import CLOSE, FAULT, REQUEST, RESPONSE, Frame
from kafka_net.protocol.codec import encode_request


def _conn(*items) -> list[Frame]:
    frames = []
    for item in items:
        position = len(frames)
        if isinstance(item, dict):
            data = json.dumps(item).encode()
            frames.append(Frame(position, 2, position, data, len(data), marker=FAULT))
        elif item == "close":
            frames.append(Frame(position, REQUEST, position, b"", 0, marker=CLOSE))
        elif item[0] == "req":
            frame = encode_request(item[1], 0, item[2], {}, "c")[4:] \
                if item[1] != 3 else encode_request(3, 1, item[2], {"topics": []}, "c")[4:]
            frames.append(Frame(position, REQUEST, position, frame, len(frame)))
        else:
            body = item[2].to_bytes(4, "big")
            frames.append(Frame(position, RESPONSE, position, body, len(body)))
    return frames


def _fault(api: int, corr: int, **more) -> dict:
    return {"rule": "f1", "action": "error", "error": "NOT_COORDINATOR", "api_key": api,
            "correlation_id": corr, **more}


def _rows(frames):
    return injected.attribute_injected(frames, [], "c1")


def test_reactions():
    looked_up = _conn(("req", 8, 1), _fault(8, 1), ("resp", 8, 1), ("req", 10, 2),
                      ("resp", 10, 2), ("req", 8, 3))
    assert _rows(looked_up)[0]["detail"].endswith(injected.LOOKED_UP_COORDINATOR)
    refreshed = _conn(("req", 0, 1), _fault(0, 1), ("resp", 0, 1), ("req", 3, 2),
                      ("resp", 3, 2), ("req", 0, 3))
    assert _rows(refreshed)[0]["detail"].endswith(injected.REFRESHED_METADATA)
    retried = _conn(("req", 0, 1), _fault(0, 1), ("resp", 0, 1), ("req", 0, 2))
    assert _rows(retried)[0]["detail"].endswith(injected.RETRIED)
    closed = _conn(("req", 0, 1), _fault(0, 1), ("resp", 0, 1), "close")
    assert _rows(closed)[0]["detail"].endswith(injected.CLOSED)
    nothing = _conn(("req", 0, 1), _fault(0, 1), ("resp", 0, 1))
    assert _rows(nothing)[0]["detail"].endswith(injected.GAVE_UP)
    cut = _conn(("req", 0, 1), {"rule": "f2", "action": "unavailable", "correlation_id": -1})
    assert _rows(cut)[0]["detail"].endswith(injected.CUT)


def test_only_the_findings_a_fault_explains_are_relabelled():
    frames = _conn(("req", 0, 1), _fault(0, 1, action="drop"), ("req", 0, 2), ("resp", 0, 2))
    findings = [
        {"check": "unanswered_request", "correlation_id": 1, "position": 0,
         "party": "broker", "severity": "violation", "detail": "never answered"},
        {"check": "unanswered_request", "correlation_id": 7, "position": 0,
         "party": "broker", "severity": "violation", "detail": "another"},
        {"check": "correlation_mismatch", "correlation_id": 1, "position": 3,
         "party": "broker", "severity": "violation", "detail": "not ours"},
    ]
    rows = injected.attribute_injected(frames, findings, "c1")
    assert [(r["check"], r["party"]) for r in rows] == [
        ("unanswered_request", "injected"), ("unanswered_request", "broker"),
        ("correlation_mismatch", "broker"), ("injected_fault", "injected")]
    assert rows[0]["detail"] == "never answered (caused by injected fault f1: drop)"
    assert injected.attribute_injected(_conn(("req", 0, 1)), findings) is findings


def test_a_connection_counts_only_the_findings_no_fault_explains():
    """transforms.check_connection: a request the fault dropped is a finding of the
    fault's (party injected), listed, but not counted in the connection's summary."""
    from kafka_net.spark_jobs import transforms
    from kafka_net.protocol import encode_response
    from kafka_net.protocol.messages import MESSAGES
    frames = _conn(("req", 3, 1), _fault(3, 1, action="drop"), ("req", 3, 2))
    answer = encode_response(3, 1, 2, MESSAGES[3].response.defaults())[4:]
    frames.append(Frame(len(frames), RESPONSE, len(frames), answer, len(answer)))
    rows = [{"connection": "c1", "source": "kncap", "order_key": (0, 0, f.position),
             "direction": f.direction, "timestamp_ns": f.timestamp_ns,
             "frame": f.frame, "frame_size": f.frame_size, "truncated": False,
             "after_gap": False, "marker": f.marker} for f in frames]
    result = transforms.check_connection("c1", rows)
    parties = [(v["check"], v["party"]) for v in result["violations"]]
    assert ("injected_fault", "injected") in parties
    assert [p for p in parties if p[1] != "injected"] == []
    assert any(c != "injected_fault" for c, _ in parties)   # a finding it relabelled
    assert result["connection"]["violations"] == 0
