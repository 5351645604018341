"""What ``bench/loadgen.py`` sends and reports: the request (Fetch), the run's spec
and its result.  Shared by the parent and its worker processes."""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field

from kafka_net.protocol.codec import encode_request

SAMPLE_EVERY = 1000      # decode every Nth response in full (plus each connection's first)
DRAIN_S = 5.0            # after the measured window, wait this long for in-flight answers
RECV_CHUNK = 256 * 1024
INT32 = struct.Struct(">i")
CID_OFFSET = 8          # size(4) + api_key(2) + api_version(2): the correlation id
CID_MAX = 2**31 - 1

DEFAULT_TOPIC = "bench-fetch"


def fetch_body(spec: "LoadSpec", connection_index: int) -> dict:
    """Fetch from offset 0 of partition i % partitions: the topic is filled before the
    run, so every request is answered at once with the same records."""
    return {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": spec.topic, "partitions": [{
                "partition": connection_index % spec.partitions, "current_leader_epoch": -1,
                "fetch_offset": 0, "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


# name -> (api_key, api_version, request body, or a function (spec, connection index) -> body)
APIS = {
    "fetch": (1, 12, fetch_body),
}


def request_template(spec: "LoadSpec", connection_index: int) -> bytes:
    """The request frame a connection sends (correlation id 0, patched per request)."""
    api_key, api_version, body = APIS[spec.api]
    if callable(body):
        body = body(spec, connection_index)
    return encode_request(api_key, api_version, 0, body, client_id="kafka-net-bench")


def has_error(value) -> bool:
    """Is there a non-zero error_code anywhere in a decoded body?"""
    if isinstance(value, dict):
        return any((k == "error_code" and v) or
                   (isinstance(v, (dict, list)) and has_error(v)) for k, v in value.items())
    if isinstance(value, list):
        return any(has_error(item) for item in value)
    return False


@dataclass
class LoadSpec:
    port: int
    host: str = "127.0.0.1"
    connections: int = 16
    depth: int = 1                    # requests in flight per connection
    requests: int | None = None       # per connection; exclusive with duration
    duration: float | None = None     # seconds measured, after warmup
    warmup: float = 0.0               # seconds (duration mode only)
    api: str = "fetch"
    workers: int = 2                  # processes; 0 = run in this process
    timeout: float = 120.0            # hard cap, seconds
    topic: str = DEFAULT_TOPIC        # must exist and hold records
    partitions: int = 1               # connection i fetches partition i % this

    def validate(self) -> None:
        if (self.requests is None) == (self.duration is None):
            raise ValueError("give exactly one of requests (per connection) or duration")
        if self.connections < 1 or self.depth < 1:
            raise ValueError("connections and depth must be >= 1")
        if self.requests is not None and self.requests < 1:
            raise ValueError("requests must be >= 1")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("duration must be > 0")
        if self.api not in APIS:
            raise ValueError(f"api must be one of {sorted(APIS)}")
        if self.workers < 0:
            raise ValueError("workers must be >= 0")
        if self.partitions < 1:
            raise ValueError("partitions must be >= 1")


@dataclass
class LoadResult:
    requests: int                 # responses counted (inside the window)
    seconds: float                # length of the window
    throughput: float             # requests / seconds
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    sent: int                     # all requests sent, warmup and drain included
    received: int                 # all responses received
    mismatches: int               # correlation id not the one expected: must be 0
    errors: int                   # sampled responses with error_code != 0
    sampled: int                  # responses decoded in full
    unanswered: int               # in flight when the connection or the time ran out
    disconnects: int              # connections the server closed
    loadgen_cpu_s: float          # CPU used by the generator's measuring loops
    workers: int
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.mismatches == 0 and self.errors == 0 and self.unanswered == 0
                and self.disconnects == 0 and self.requests > 0)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "ok": self.ok}, indent=2)
