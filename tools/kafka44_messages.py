"""Write tests/protocol/kafka44_messages.json: Kafka 4.4's messages, key by key.

franz-go's definitions (``tools/kafka42_messages.py``, which wrote
``kafka42_messages.json``) stop at Kafka 4.2.  Kafka 4.3 and 4.4 changed six
APIs (:data:`AFTER_4_2`); for those this script reads Kafka's own message JSON
as kept in ``tests/protocol/kafka_json/`` (README there: where each came from)
and computes the same per-version layout digests; every other key keeps its
4.2 entry, which 4.3 and 4.4 left as it was.  The result is the one table
``tests/protocol/test_kafka44_messages.py`` checks every key 0-93 against.

Sources, checked against Kafka 4.4's released definitions where any is
reachable (apache/kafka commits after the 4.4 RPCs were marked stable):
DeleteGroups v3 at 07a283acad20eb98936d789eeaa39c2acb5479b7 (request) and
3ef07f0e9aa755654d0b56c7507851062402a35d (response); StreamsGroupHeartbeat
request v1 and key 93's request (StreamsGroupTopologyDescriptionUpdate, the
name 4.4 ships) at 09ed70433d9abd5972f48503694ef34cdfae4b82, key 93's response
at 8022dc686d8b6946f87ec90337a055d5a8e6b6bd; StreamsGroupDescribe request v1
at 07a283acad20.  No released JSON of StreamsGroupHeartbeat *response* v1 or
StreamsGroupDescribe *response* v1 is reachable (every stored copy is v0):
their layouts follow apache/kafka's streams cross-version system test
(a6fe4c48bfc5a7aa2a6bdc1ce7c162ab1bc09058, which names the fields each adds)
and the field order of a codec generated from the schema;
``tests/protocol/kafka_json/README.md`` gives the details.

Not needed at test time beyond ``--check`` (the JSON is checked in).  Run from
the repository root::

    python tools/kafka44_messages.py [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

# The 4.2 tool's JSON layout and its write-or-check, so both tables read alike
# (run as a script, this file's folder, tools/, is on the import path).
from kafka42_messages import render, write_or_check

TESTS = Path(__file__).resolve().parent.parent / "tests" / "protocol"
BASE = TESTS / "kafka42_messages.json"
KAFKA_JSON = TESTS / "kafka_json"
OUTPUT = TESTS / "kafka44_messages.json"

# key -> (message name, the release that changed it and why)
AFTER_4_2: dict[int, tuple[str, str]] = {
    28: ("TxnOffsetCommit", "4.4: v6, topics by id (KIP-1319)"),
    35: ("DescribeLogDirs", "4.3: v5, IsCordoned (KIP-1066)"),
    42: ("DeleteGroups", "4.4: v3, per-group ErrorMessage (KIP-1331)"),
    88: ("StreamsGroupHeartbeat", "4.4: v1, TopologyDescriptionRequired (KIP-1331)"),
    89: ("StreamsGroupDescribe",
         "4.4: v1, IncludeTopologyDescription (KIP-1331), AssignorName (KIP-1357)"),
    93: ("StreamsGroupTopologyDescriptionUpdate", "4.4: new (KIP-1331, KAFKA-20620)"),
}

_SCALARS = {"bool", "int8", "int16", "uint16", "int32", "int64", "uint32", "float64",
            "uuid", "string", "bytes"}


def versions(text: str | None) -> range:
    """Kafka's version range notation: "3+", "0-5", "2", "none"."""
    if text is None or text == "none":
        return range(0)
    if text.endswith("+"):
        return range(int(text[:-1]), 2**15)
    low, _, high = text.partition("-")
    return range(int(low), int(high or low) + 1)


def read_json(name: str) -> dict:
    text = (KAFKA_JSON / f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines()
                                if not line.lstrip().startswith("//")))


# The layout string of tools/kafka42_messages.py: regular fields' types in order,
# then (flexible versions only) | and the tagged ones by tag; ? marks a field
# nullable at that version.

def layout(fields: list, version: int, flexible: bool, common: dict) -> str:
    regular, tagged = [], []
    for f in fields:
        if version not in versions(f["versions"]):
            continue
        text = ("?" if version in versions(f.get("nullableVersions")) else "") + \
            _type(f["type"], f.get("fields"), version, flexible, common)
        if "tag" in f and version in versions(f.get("taggedVersions")):
            if flexible:
                tagged.append((int(f["tag"]), text))
        else:
            regular.append(text)
    text = ",".join(regular)
    if flexible:
        text += "|" + ",".join(f"{tag}={t}" for tag, t in sorted(tagged))
    return text


def _type(t: str, fields, version: int, flexible: bool, common: dict) -> str:
    if t.startswith("[]"):
        return "[" + _type(t[2:], fields, version, flexible, common) + "]"
    if t == "records":
        return "bytes"
    if t in _SCALARS:
        return t
    return "{" + layout(fields if fields is not None else common[t], version, flexible,
                        common) + "}"


def entry(key: int, name: str, why: str) -> dict:
    out: dict = {"key": key, "name": name}
    for kind in ("request", "response"):
        message = read_json(name + kind.capitalize())
        if message["apiKey"] != key:
            raise SystemExit(f"{name}{kind.capitalize()}.json has key {message['apiKey']}")
        high = versions(message["validVersions"])[-1]
        flex = versions(message["flexibleVersions"])
        common = {c["name"]: c["fields"] for c in message.get("commonStructs", [])}
        out[kind] = {
            "valid": [0, high], "flexible_from": flex[0] if flex else None,
            "layouts": [hashlib.sha1(layout(message["fields"], v, v in flex, common)
                                     .encode()).hexdigest()[:10] for v in range(high + 1)]}
    out["source"] = f"tests/protocol/kafka_json/{name}*.json ({why})"
    return out


def collect() -> dict:
    base = json.loads(BASE.read_text())
    apis = {api["key"]: api for api in base["apis"]}
    for key, (name, why) in AFTER_4_2.items():
        apis[key] = entry(key, name, why)
    return {
        "about": "Kafka 4.4's API keys with request/response version ranges, the first "
                 "flexible version (null: never flexible) and a digest of each version's "
                 "wire layout: Kafka 4.2's (kafka42_messages.json, from franz-go) with "
                 "the keys Kafka 4.3 and 4.4 changed read from their message JSON in "
                 "kafka_json/, by tools/kafka44_messages.py.",
        "source": {"base": base["source"], "after_4_2": {
            str(key): why for key, (_, why) in sorted(AFTER_4_2.items())}},
        "apis": [apis[key] for key in sorted(apis)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the checked-in JSON differs instead of writing it")
    args = parser.parse_args(argv)
    return write_or_check(OUTPUT, render(collect()), args.check)


if __name__ == "__main__":
    sys.exit(main())
