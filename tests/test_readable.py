"""KAFKA_NET_READABLE=1 switches each fast path to its readable reference
(kafka_net/protocol/readable.py).  The flag is read at import, so each case runs
in a fresh interpreter, with and without it: the same facts must flip."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.compiled import compiled_modules

PROBE = r"""
import json
from types import MappingProxyType
from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import Request
from kafka_net.protocol import codec
from kafka_net.protocol.codec import encode_request, encode_response
from kafka_net.protocol.messages import MESSAGES
from kafka_net.server.apis import KafkaApis
from kafka_net.server.metadata_cache import MetadataCache

facts = {}
decoder = MESSAGES[3].request.decoder(12)
facts["interpreted_decoder"] = "_interpreted" in decoder.__qualname__
facts["interpreted_encoder"] = "_interpreted" in MESSAGES[3].response.encoder(12).__qualname__
encode_response(18, 3, 7, {"error_code": 0, "api_keys": []})
facts["response_routes_cached"] = bool(codec._RESPONSE_ROUTES)
apis = KafkaApis(ServerConfig(), MetadataCache(1, "c"))
frame = encode_request(18, 3, 7, {"client_software_name": "t",
                                  "client_software_version": "1"})[4:]
parsed = apis.parse_request(frame)
facts["request_routes_cached"] = bool(apis._parse_table[1])
request = Request.from_parsed(0, "c", "PLAINTEXT", ("127.0.0.1", 1), parsed)
body = apis.api_versions_body(parsed)
assert type(body) is MappingProxyType
one, two = apis._encode(request, body), apis._encode(request, body)
facts["same_frames"] = one == two
facts["constant_frames_cached"] = bool(apis._constant_frames)
print(json.dumps(facts))
"""


def probe(readable: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_NET_READABLE"}
    if readable is not None:
        env["KAFKA_NET_READABLE"] = readable
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("value,readable", [(None, False), ("0", False), ("1", True)])
def test_each_fast_path_is_switched_by_the_variable(value, readable):
    facts = probe(value)
    assert facts.pop("same_frames")
    assert facts == {"interpreted_decoder": readable, "interpreted_encoder": readable,
                     "response_routes_cached": not readable,
                     "request_routes_cached": not readable,
                     "constant_frames_cached": not readable}


COMPILED_PROBE = r"""
import json, sys
import kafka_net.spark_jobs.conformance
import kafka_net.spark_jobs.arrow_stages, kafka_net.spark_jobs.task_reads
import kafka_net.spark_jobs.kncap_arrow, kafka_net.spark_jobs.pcap_arrow
print(json.dumps(sorted(m for m in sys.modules if m.startswith("kafka_net")
                        and m.rsplit(".", 1)[-1].startswith("_")
                        and getattr(sys.modules[m], "__file__", "").endswith(".so"))))
"""


@pytest.mark.parametrize("value", ["0", "1"])
def test_the_conformance_job_imports_its_compiled_modules_only_when_not_readable(value):
    """Every kafka_net/**/_*.pyx is a compiled fast path: the job imports each of
    them, and with KAFKA_NET_READABLE=1 none of them."""
    compiled = compiled_modules()
    env = dict(os.environ, KAFKA_NET_READABLE=value)
    out = subprocess.run([sys.executable, "-c", COMPILED_PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    imported = json.loads(out.strip().splitlines()[-1])
    assert imported == ([] if value == "1" else compiled)
