"""CPU per body of the generated walkers and decoders, this checkout against another.

``python -m bench.walker_costs --base DIR [--rounds 5] [--repeat 2000]`` (``DIR``
another checkout, e.g. ``git archive BASE | tar -x -C DIR``): writes the bodies
once, then runs each checkout's walkers on them in a fresh interpreter of its
own, the two taking turns round after round.  Each walker is built as the
conformance job builds it (``kafka_net.capture.pairing_checks``: a request's
acks and timeouts kept, a response's error codes, Produce and Fetch records;
its compiled program first where the checkout has one, ``_compiled``) and
called on the body alone.  Two sets of bodies:

* ``bench mix``: the spark_bench conversation's requests and responses (Produce,
  Fetch, Metadata, ApiVersions, ListOffsets), in its proportions;
* ``every message``: each API's request and response at each version, holding
  the schema's defaults (short bodies: the fixed cost of a walk).

Prints CPU µs per body (``time.process_time``, best of three passes per round,
the garbage collector off) of the walkers and, on the same bodies, of the
compiled decoders; the median and range over the rounds per checkout; and
whether both checkouts' walkers and decoders gave the same results on every
body.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.spark_bench import MIX, request_templates
from kafka_net.capture.pairing_checks import REQUEST_VALUES
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.headers import (
    decode_request_header, decode_response_header, peek_request_header,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES

# Runs in each checkout's interpreter: only names both sides have.
CHILD = r"""
import gc, hashlib, json, pickle, sys, time
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.walker import walker
try:   # the walk the conformance job runs: a compiled program first, where built
    from kafka_net.capture.pairing_checks import _compiled
except ImportError:   # a checkout without compiled walks
    _compiled = None

path, repeat = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as fh:
    sets = pickle.load(fh)


def best_of_three(calls, body_count):
    best = float("inf")
    for _ in range(3):
        gc.collect()
        gc.disable()
        t0 = time.process_time()
        for _ in range(repeat):
            for call, body in calls:
                call(body, 0)
        best = min(best, time.process_time() - t0)
        gc.enable()
    return best / (repeat * body_count) * 1e6


def outcome(call, body):
    try:
        return repr(call(body, 0))
    except Exception as exc:
        return type(exc).__name__


out = {}
for name, bodies in sets.items():
    walks, decodes = [], []
    for key, version, is_request, body, top, codes, records in bodies:
        message = MESSAGES[key]
        schema = message.request if is_request else message.response
        walks.append(((_compiled or walker)(schema, version, tuple(top), codes, records), body))
        decodes.append((schema.decoder(version), body))
    results = [outcome(call, body) for call, body in walks + decodes]
    out[name] = {"walk": best_of_three(walks, len(walks)),
                 "decode": best_of_three(decodes, len(decodes)),
                 "results": hashlib.sha256("\n".join(results).encode()).hexdigest(),
                 "bodies": len(walks)}
print(json.dumps(out))
"""


def _walk_options(key: int, version: int, is_request: bool, schema) -> tuple:
    """(top, codes, records) as the conformance job asks for them."""
    if is_request:
        top = tuple(f.name for f in schema.struct.fields if f.name in REQUEST_VALUES)
        return top, False, key == ApiKey.PRODUCE and version >= 3
    return (), True, key == ApiKey.FETCH


def bench_mix() -> list[tuple]:
    bodies = []
    templates = request_templates()
    for index in MIX:
        _, request, response = templates[index]
        key, version, _ = peek_request_header(request)
        message = MESSAGES[key]
        offset = decode_request_header(request, message.request.flexible)[1]
        top, codes, records = _walk_options(key, version, True, message.request)
        bodies.append((key, version, True, request[offset:], top, codes, records))
        header = response_header_version(key, version, message.response.flexible)
        offset = decode_response_header(response, header)[1]
        top, codes, records = _walk_options(key, version, False, message.response)
        bodies.append((key, version, False, response[offset:], top, codes, records))
    return bodies


def every_message() -> list[tuple]:
    bodies = []
    for key, message in MESSAGES.items():
        for is_request, schema in ((True, message.request), (False, message.response)):
            for version in range(schema.valid.low, schema.valid.high + 1):
                body = schema.encode(schema.defaults(), version)
                bodies.append((int(key), version, is_request, body,
                               *_walk_options(key, version, is_request, schema)))
    return bodies


def run_child(checkout: Path, bodies: str, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run([sys.executable, "-c", CHILD, bodies, str(repeat)], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.walker_costs")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2000,
                        help="passes over the bench mix per timing (every message: 1/20)")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    checkouts = {"base": args.base.resolve(), "this": here}
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="kafka-net-walker-costs-") as work:
        sets = {"bench mix": bench_mix(), "every message": every_message()}
        runs: dict[tuple, list] = {}
        results: dict[str, set] = {s: set() for s in sets}
        for set_name, bodies in sets.items():
            path = os.path.join(work, set_name.replace(" ", "_") + ".pickle")
            with open(path, "wb") as fh:
                pickle.dump({set_name: bodies}, fh)
            repeat = args.repeat if set_name == "bench mix" else max(1, args.repeat // 20)
            for r in range(args.rounds):
                order = list(checkouts) if r % 2 == 0 else list(reversed(checkouts))
                for name in order:
                    got = run_child(checkouts[name], path, repeat)[set_name]
                    for what in ("walk", "decode"):
                        runs.setdefault((set_name, what, name), []).append(got[what])
                    results[set_name].add(got["results"])
                    print(f"  round {r + 1} {name:4} {set_name}: walk {got['walk']:.3f}, "
                          f"decode {got['decode']:.3f} µs/body ({got['bodies']} bodies "
                          f"x {repeat})", flush=True)
    for set_name in sets:
        for what in ("walk", "decode"):
            for name in checkouts:
                xs = runs[(set_name, what, name)]
                print(f"{set_name:13} {what:6} {name:4}: median {statistics.median(xs):.3f} "
                      f"µs/body, range {min(xs):.3f}-{max(xs):.3f} ({len(xs)} rounds)")
        print(f"{set_name:13} same results on every body: {len(results[set_name]) == 1}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
