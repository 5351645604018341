"""Requests against the versions the broker advertised on their connection, sans-IO
(run by :func:`kafka_net.capture.pairing.pair_connection` after its walk).

Each ApiVersions response without error on a connection advertises, per API
key, the versions the broker serves (KIP-35); a later request on that
connection at a version outside its key's range (or of a key not advertised)
is the client's ``unadvertised_version``.  If the broker then answers it
without refusing (no UNSUPPORTED_VERSION in the answer), that answer is the
broker's ``unadvertised_version_served``.  Kafka's own refusal is to close the
connection, so such a request left without an answer is never
``unanswered_before_close``.  ApiVersions requests are exempt (KIP-511: a
client probes with its newest version), and so are api keys no schema knows
(``undecodable_request`` already).  Requests before the first advertised
range, or on a connection whose ApiVersions answer was not captured whole,
are not checked, nor are requests read where the framing was not confirmed
(after a gap or a mid-stream start, before a frame decoded whole: see
:mod:`.pairing`).  See :mod:`.attribution` for whose findings these are.
"""

from __future__ import annotations

from functools import lru_cache

from kafka_net.capture.attribution import UNSUPPORTED_VERSION
from kafka_net.capture.model import ConnectionReport, Frame, Violation
from kafka_net.capture.pairing_checks import CHECKED, BodyProblem, check_response_body
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError

UNADVERTISED = "unadvertised_version"
SERVED = "unadvertised_version_served"
_KNOWN_KEYS = frozenset(int(k) for k in ApiKey)


def advertised_ranges(frames: list[Frame], report: ConnectionReport
                      ) -> list[tuple[int, dict[int, tuple[int, int]]]]:
    """[(position of the ApiVersions response, {api key: (min, max)})], in order."""
    out = []
    for p in report.pairs:
        if p.api_key != ApiKey.API_VERSIONS:
            continue
        st = report.states.get(p.response_position)
        if st is None or st.state != CHECKED:
            continue          # cut or lost: what it advertised is not known
        frame = frames[p.response_position].frame
        # The broker answers every connection alike: decode each distinct answer once
        # (the first four bytes are the correlation id, ApiVersions' header is v0).
        ranges = _advertised(p.api_version, bytes(frame[4:]))
        if ranges is not None:
            out.append((p.response_position, ranges))
    return out


@lru_cache(maxsize=64)
def _advertised(api_version: int, body: bytes) -> dict[int, tuple[int, int]] | None:
    """{api key: (min, max)} an ApiVersions response body advertises; None if it
    advertises nothing (an error, or not decodable: a violation pairing reports).
    Read-only to callers: it is shared between every answer with these bytes."""
    try:
        decoded = check_response_body(b"\0\0\0\0" + body, ApiKey.API_VERSIONS,
                                      api_version)[0]
    except (BodyProblem, InvalidRequestError):
        return None
    ranges = {k["api_key"]: (k["min_version"], k["max_version"])
              for k in (decoded or {}).get("api_keys") or ()}
    # A broker always lists ApiVersions itself; a list without it (an empty
    # one, as test doubles answer) advertises nothing a client could use.
    if decoded and decoded.get("error_code") == 0 and ApiKey.API_VERSIONS in ranges:
        return ranges
    return None


def check_advertised_versions(frames: list[Frame], report: ConnectionReport) -> None:
    """Add the findings of the module docstring to ``report.violations``."""
    adverts = advertised_ranges(frames, report)
    if not adverts:
        return
    pairs = {p.request_position: p for p in report.pairs}
    refused_unanswered: set[int] = set()
    for req in report.requests:
        if req.api_key == ApiKey.API_VERSIONS or req.api_key not in _KNOWN_KEYS:
            continue    # an api key no schema knows is undecodable_request already
        if req.suspect is not None:
            continue    # read where framing was not confirmed: perhaps no request at all
        advert = next(((pos, r) for pos, r in reversed(adverts) if pos < req.position), None)
        if advert is None:
            continue
        pos, ranges = advert
        served = ranges.get(req.api_key)
        if served is not None and served[0] <= req.api_version <= served[1]:
            continue
        title = f"{_title(req.api_key)} v{req.api_version} request"
        said = (f"versions {served[0]}-{served[1]}" if served is not None
                else "no version of this API")
        pair = pairs.get(req.position)
        outcome = _outcome(pair, report)
        report.violations.append(Violation(
            UNADVERTISED, req.position, req.timestamp_ns, req.correlation_id,
            f"{title}: the broker advertised {said} on this connection (its ApiVersions "
            f"response, frame #{pos} of the connection); {outcome}"))
        if pair is None:
            refused_unanswered.add(req.position)
        elif outcome.startswith("answered without"):
            report.violations.append(Violation(
                SERVED, pair.response_position, pair.response_ns, req.correlation_id,
                f"answered a {title} without UNSUPPORTED_VERSION, a version it did not "
                f"advertise on this connection ({said}, ApiVersions response: frame #{pos} "
                f"of the connection); Kafka closes the connection instead"))
    if refused_unanswered:
        report.violations[:] = [v for v in report.violations if not (
            v.check == "unanswered_before_close" and v.position in refused_unanswered)]
    report.violations.sort(key=lambda v: (v.position, v.check))


def _outcome(pair, report: ConnectionReport) -> str:
    if pair is None:
        return "the broker did not answer it (Kafka closes the connection)"
    st = report.states.get(pair.response_position)
    if UNSUPPORTED_VERSION in pair.error_codes:
        return "the broker refused it (UNSUPPORTED_VERSION)"
    if st is None or st.state != CHECKED:
        return "its answer could not be read whole (whether it refused is not known)"
    return "answered without UNSUPPORTED_VERSION"


def _title(api_key: int) -> str:
    try:
        return ApiKey(api_key).title
    except ValueError:
        return f"api key {api_key}"


__all__ = ["SERVED", "UNADVERTISED", "advertised_ranges", "check_advertised_versions"]
