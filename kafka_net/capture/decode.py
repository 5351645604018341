"""A capture's Kafka frames as text, like ``tshark -V`` for Kafka, sans-IO (the
core of ``kafka-net decode``).

For each frame: where it is (Wireshark's frame number, or the .kncap record's
byte offset), when (UTC), the connection and direction, the size, the API,
version, correlation id and client id, its coverage state (as the conformance
job decides it: the same pairing walk), then the body as an indented tree,
decoded by the codec's schemas.  Record batches are summarised (base offset,
count, codec, size), a PushTelemetry's metrics decompressed and decoded (OTLP:
one line per data point, :mod:`kafka_net.protocol.otlp`); what does not decode
is shown as hex.  Gaps (bytes lost
from the capture) and the client's FIN are noted where they fall, and any
finding after the frame it concerns, with its severity and whose it is
(:mod:`.attribution`): ``DEVIATION trailing_bytes (client's, known deviation
...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from kafka_net.capture.findings import (
    RequestIndex, hex_excerpt, iso_utc, locate_violations, pdu)
from kafka_net.capture.injected import attribute_injected
from kafka_net.capture.model import CLOSE, FAULT, GAP, REQUEST, SYNC, Frame
from kafka_net.capture.pairing import pair_connection
from kafka_net.capture.reader import CapturedConnection, read_capture_file
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import (
    decode_response_header, peek_request_header, peek_response_correlation_id,
    read_request_header, response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.otlp import (
    OtlpDecodeError, TelemetryTooLargeError, attribute_text, decode_metrics_data,
    decompress_payload)
from kafka_net.protocol.primitives import Reader
from kafka_net.protocol.schema import Array, Field, Struct
from kafka_net.protocol.records.framing import (
    Compression, RecordError, iter_batches, read_header)

INDENT = "    "
HEX_LIMIT = 64          # bytes of hex shown for an undecodable part or a bytes field
STRING_LIMIT = 200


@dataclass
class _Item:
    """One frame (or marker) to print, with what pairing said about it."""

    sort_key: tuple
    connection: str
    frame: Frame
    api: tuple[int, int, str | None] | None     # api key, version, client id (requests,
    state: str                                  # and responses paired with one)
    reason: str
    violations: list


def decode_file(data: bytes, path: str = "", max_frames: int | None = None,
                connection: str | None = None,
                broker_ports: set[int] | None = None) -> Iterator[str]:
    """Lines of text for the capture in ``data`` (``path`` names it in the output).
    ``connection``: only connections whose id contains this text."""
    capture = read_capture_file(data, path, broker_ports)
    if capture.kind is None:
        yield f"{path or 'input'}: not a capture ({'; '.join(capture.problems)})"
        return
    yield f"{path or 'input'}: {capture.kind} capture, {len(capture.connections)} connection(s)"
    for problem in capture.problems:
        yield f"problem: {problem}"
    items = []
    for conn in capture.connections:
        if connection is None or connection in conn.id:
            items.extend(_items(conn))
    items.sort(key=lambda i: i.sort_key)
    shown = 0
    for item in items:
        if max_frames is not None and shown >= max_frames:
            yield f"... {sum(1 for i in items if i.frame.marker is None) - shown} more " \
                  f"frame(s) not shown (--max {max_frames})"
            break
        yield ""
        yield from _render(item)
        shown += item.frame.marker is None


def _items(conn: CapturedConnection) -> list[_Item]:
    report = pair_connection(conn.frames)
    api: dict[int, tuple] = {r.position: (r.api_key, r.api_version, r.client_id)
                             for r in report.requests}
    for p in report.pairs:
        api[p.response_position] = (p.api_key, p.api_version, p.client_id)
    requests = RequestIndex(report)
    for f in conn.frames:   # responses not paired (duplicates, early ones): by their id
        corr = peek_response_correlation_id(f.frame) \
            if f.marker is None and f.direction != REQUEST and f.position not in api else None
        if corr is not None:
            req = requests.for_response(corr, f.position)
            if req is not None:
                api[f.position] = (req.api_key, req.api_version, req.client_id)
    violations: dict[int, list] = {}
    located = locate_violations(conn.frames, report, conn.id)   # with whose they are
    for v in attribute_injected(conn.frames, located, conn.id):  # and injected faults
        violations.setdefault(v["position"], []).append(v)
    out = []
    for f in conn.frames:
        st = report.states.get(f.position)
        # capture order: frame number (pcap) or record offset (kncap); markers after
        # the frame before them
        where = f.frame_number or f.file_offset
        key = (where if where > 0 else _previous_where(conn.frames, f.position), f.position,
               conn.id)
        out.append(_Item(key, conn.id, f, api.get(f.position),
                         st.state if st else "", st.reason if st else "",
                         violations.get(f.position, [])))
    return out


def _previous_where(frames: list[Frame], position: int) -> int:
    for f in reversed(frames[:position]):
        if f.marker is None:
            return f.frame_number or f.file_offset
    return 0


def _render(item: _Item) -> Iterator[str]:
    f = item.frame
    if f.marker == GAP:
        lo, hi = f.gap or (0, 0)
        side = "client -> broker" if f.direction == REQUEST else "broker -> client"
        yield (f"[gap] {item.connection} {side}: stream bytes {lo}-{hi} ({hi - lo} bytes) "
               f"lost or unusable; frames after it until a boundary is confirmed are "
               f"unverifiable")
        return
    if f.marker == SYNC:
        side = "client -> broker" if f.direction == REQUEST else "broker -> client"
        skipped = (f.gap or (0, 0))[1]
        yield (f"[sync] {item.connection} {side}: the capture started mid-stream; the "
               f"first frame boundary was found by searching ({skipped} bytes skipped "
               f"before it); this side's faults are unverifiable until a frame decodes whole")
        if skipped:
            yield (f"{INDENT}Skipped: stream bytes 0-{skipped}, {max(1, f.frame_size)} "
                   f"frame(s) (the end of the one the capture started inside, and any "
                   f"whole ones before the boundary), counted as unverifiable")
        return
    if f.marker == CLOSE:
        yield f"[close] {item.connection}: the client closed the connection (FIN) at " \
              f"{iso_utc(f.timestamp_ns)}"
        return
    if f.marker == FAULT:
        yield f"[fault] {item.connection} at {iso_utc(f.timestamp_ns)}: " \
              f"{bytes(f.frame).decode('utf-8', 'replace')}"
        for v in item.violations:
            yield f"{INDENT}{v['severity'].upper()} {v['check']} ({_whose(v)}): {v['detail']}"
        return
    if f.frame_number:
        yield f"Frame {f.frame_number} ({f.file}, packet {f.frame_number})"
    else:
        yield f"Record at byte {f.file_offset} of {f.file}"
    request = f.direction == REQUEST
    yield f"{INDENT}Time: {iso_utc(f.timestamp_ns)} ({f.timestamp_ns} ns)"
    yield (f"{INDENT}Connection: {item.connection}, "
           f"{'client -> broker (request)' if request else 'broker -> client (response)'}")
    cut = f", captured {len(f.frame)}" if f.truncated else ""
    yield f"{INDENT}Length: {f.frame_size}{cut} (after the 4-byte size prefix)"
    state = item.state.replace("_", " ") or "not checked"
    yield f"{INDENT}Coverage: {state}{f' ({item.reason})' if item.reason else ''}"
    yield from (INDENT + line for line in _kafka(f, item.api))
    for v in item.violations:
        yield f"{INDENT}{v['severity'].upper()} {v['check']} ({_whose(v)}): {v['detail']}"


def _whose(v: dict) -> str:
    known = f", known deviation {v['known_deviation']}" if v["known_deviation"] else ""
    return f"{v['party']}'s{known}"


def _kafka(f: Frame, api) -> Iterator[str]:
    if f.direction == REQUEST:
        if len(f.frame) < 8:
            yield "Kafka: too short for a request header"
            yield from _hex(pdu(f))
            return
        key, version, corr = peek_request_header(f.frame)
        yield from _request(f, key, version, corr)
        return
    corr = peek_response_correlation_id(f.frame)
    if corr is None:
        yield "Kafka: too short for a response header"
        yield from _hex(pdu(f))
        return
    if api is None:
        yield f"Kafka: response, correlation id {corr} (no request to tie it to: body not " \
              f"decoded)"
        yield from _hex(pdu(f))
        return
    yield from _response(f, api[0], api[1], corr)


def _request(f: Frame, key: int, version: int, corr: int) -> Iterator[str]:
    def header(message):
        h, offset = read_request_header(f.frame, key, version, corr, message.request.flexible)
        return f", client id {h.client_id!r}", message.request, version, offset
    yield from _message(f, key, version, corr, "request", header)


def _response(f: Frame, key: int, version: int, corr: int) -> Iterator[str]:
    def header(message):
        v = version
        if key == ApiKey.API_VERSIONS and v not in message.response.valid:
            v = 0     # KIP-511: answered with a v0 body
        _, offset = decode_response_header(
            f.frame, response_header_version(key, v, message.response.flexible))
        return "", message.response, v, offset
    yield from _message(f, key, version, corr, "response", header)


def _message(f: Frame, key: int, version: int, corr: int, kind: str, header
             ) -> Iterator[str]:
    """The title line, then the body; ``header(message)`` reads the header and gives
    (title suffix, schema, body version, body offset)."""
    message = MESSAGES.get(key)
    title = f"Kafka: {api_name(key)} v{version} {kind} (api key {key}), correlation id {corr}"
    if message is None:
        yield title + " (no schema for this API: header only)"
        yield from _hex(pdu(f))
        return
    try:
        suffix, schema, body_version, offset = header(message)
    except InvalidRequestError as exc:
        yield title
        yield f"Header does not decode: {exc}"
        yield from _hex(pdu(f))
        return
    yield title + suffix
    yield from _body(schema, f, offset, body_version)


def _body(schema, f: Frame, offset: int, version: int) -> Iterator[str]:
    if version not in schema.valid:
        yield f"Body: version {version} unknown to the schema (not decoded)"
        yield from _hex(f.frame[offset:], offset + 4)
        return
    if f.truncated:
        yield "Body: cut by the capture's snap length (not decoded)"
        yield from _hex(f.frame[offset:], offset + 4)
        return
    r = Reader(f.frame, offset)
    try:
        body = schema.decode(r, version)
    except InvalidRequestError as exc:
        yield f"Body: does not decode at byte {r.pos + 4}: {exc}"
        yield from _hex(f.frame[offset:], offset + 4)
        return
    yield "Body:"
    yield from _tree(body, schema.struct, version, schema.is_flexible(version), 1)
    if r.pos != len(f.frame):
        yield f"Trailing bytes: {len(f.frame) - r.pos} after the body's end"
        yield from _hex(f.frame[r.pos:], r.pos + 4)


def _present(struct: Struct, version: int, flexible: bool) -> list[Field]:
    """The fields of ``struct`` that exist at ``version``: a decoded body holds every
    field of the schema, those absent at its version at their defaults, which are
    not in the frame and must not be shown as if they were.  A tagged field exists
    only in flexible versions (KIP-482)."""
    return [f for f in struct.fields
            if version in f.versions and (f.tag is None or flexible)]


def _tree(value: dict, struct: Struct, version: int, flexible: bool, depth: int
          ) -> Iterator[str]:
    pad = INDENT * depth
    for field in _present(struct, version, flexible):
        if field.name not in value:
            continue
        name, v = field.name, value[field.name]
        inner = field.type.item if isinstance(field.type, Array) else field.type
        if isinstance(v, dict):
            yield f"{pad}{name}:"
            yield from _tree(v, inner, version, flexible, depth + 1)
        elif isinstance(v, list):
            yield f"{pad}{name}: {len(v)} item(s)"
            for i, item in enumerate(v):
                if isinstance(item, dict):
                    yield f"{pad}{INDENT}[{i}]"
                    yield from _tree(item, inner, version, flexible, depth + 2)
                else:
                    yield f"{pad}{INDENT}[{i}] {_scalar(item)}"
        elif isinstance(v, (bytes, bytearray, memoryview)) and name == "records":
            yield from _records(bytes(v), pad, name)
        elif isinstance(v, (bytes, bytearray, memoryview)) and name == "metrics" \
                and "compression_type" in value:   # PushTelemetry's OTLP payload
            yield from _telemetry(bytes(v), value["compression_type"], pad, name)
        else:
            yield f"{pad}{name}: {_scalar(v)}"


def _scalar(v) -> str:
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        more = f" ... ({len(b)} bytes)" if len(b) > HEX_LIMIT else ""
        return b[:HEX_LIMIT].hex(" ") + more if b else "(empty)"
    if isinstance(v, str):
        text = v if len(v) <= STRING_LIMIT else v[:STRING_LIMIT] + f"... ({len(v)} chars)"
        return repr(text)
    return str(v)


def _records(data: bytes, pad: str, name: str) -> Iterator[str]:
    """Record batches summarised: one line per batch."""
    if not data:
        yield f"{pad}{name}: (none)"
        return
    yield f"{pad}{name}: {len(data)} bytes"
    try:
        for batch in iter_batches(data, allow_partial_tail=True):
            h = read_header(batch) if len(batch) >= 61 and batch[16] == 2 else None
            if h is None:
                yield f"{pad}{INDENT}batch: magic {batch[16]}, {len(batch)} bytes (not summarised)"
                continue
            codec = Compression(h.compression).name.lower() if h.compression < 5 \
                else f"unknown ({h.compression})"
            yield (f"{pad}{INDENT}batch: base offset {h.base_offset}, {h.records_count} "
                   f"record(s), codec {codec}, {h.size} bytes, producer id {h.producer_id}")
    except RecordError as exc:
        yield f"{pad}{INDENT}batch framing broken: {exc}"


def _telemetry(data: bytes, compression_type: int, pad: str, name: str) -> Iterator[str]:
    """A PushTelemetry payload: decompressed (bounded) and decoded as OTLP
    MetricsData, one line per data point; what does not decode is said so."""
    codec = _CODECS.get(compression_type, f"unknown ({compression_type})")
    if not data:
        yield f"{pad}{name}: (none)"
        return
    try:
        resources = decode_metrics_data(
            decompress_payload(compression_type, data, TELEMETRY_LIMIT))
    except (OtlpDecodeError, TelemetryTooLargeError) as exc:
        yield f"{pad}{name}: {len(data)} bytes, {codec}: not OTLP metrics ({exc})"
        yield from (pad + INDENT + line.strip() for line in _hex(data))
        return
    count = sum(len(s.metrics) for r in resources for s in r.scopes)
    yield f"{pad}{name}: {len(data)} bytes, {codec}, OTLP: {count} metric(s)"
    inner = pad + INDENT
    for resource in resources:
        if resource.attributes:
            yield f"{inner}resource: {_attributes(resource.attributes)}"
        for scope in resource.scopes:
            version = f" version {scope.version!r}" if scope.version else ""
            yield f"{inner}scope: {scope.name!r}{version}"
            for metric in scope.metrics:
                yield from _metric_lines(metric, inner + INDENT)


_CODECS = {0: "uncompressed", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_TEMPORALITY = {1: "delta", 2: "cumulative"}
TELEMETRY_LIMIT = 16 * 1024 * 1024   # decompressed bytes shown per payload, at most


def _metric_lines(metric, pad: str) -> Iterator[str]:
    kind = metric.kind or "no data"
    if metric.kind in ("sum", "histogram", "exponential_histogram"):
        kind += f", {_TEMPORALITY.get(metric.temporality, 'unspecified')}"
    if metric.monotonic:
        kind += ", monotonic"
    for point in metric.points or [None]:
        if point is None:
            yield f"{pad}{metric.name} ({kind})"
            continue
        attrs = f" {_attributes(point.attributes)}" if point.attributes else ""
        if point.value is not None:
            shown = f"= {point.value}"
        else:
            shown = f"count={point.count} sum={point.sum}"
            if point.bucket_counts:
                shown += f" buckets={point.bucket_counts} bounds={point.explicit_bounds}"
            if point.quantiles:
                shown += f" quantiles={point.quantiles}"
        yield f"{pad}{metric.name} ({kind}){attrs} {shown}"


def _attributes(attributes: dict) -> str:
    return "{" + ", ".join(f"{k}={attribute_text(v)}" for k, v in attributes.items()) + "}"


def _hex(data: bytes, start: int = 0) -> Iterator[str]:
    """Hex lines; offsets counted from the size prefix's first byte."""
    text = hex_excerpt(b"\x00" * start + bytes(data), start, HEX_LIMIT)
    for line in text.splitlines():
        yield f"{INDENT}{line}"
    if len(data) > HEX_LIMIT:
        yield f"{INDENT}... ({len(data) - HEX_LIMIT} more bytes)"


__all__ = ["decode_file"]
