"""Write kafka_net/protocol/kafka_releases.py: what each Kafka release 2.1 ... 4.4 served.

    python docs/make_kafka_releases.py [FRANZ_GO_GIT_DIR] [--check]

Reads franz-go's ``pkg/kversion/requests.go`` at :data:`COMMIT` (``git show``,
from the mirror at /work/.mirror/twmb+franz-go/repo unless a git directory is
given), replays its per-release steps (``clone``, ``incmax``, ``addkey``,
``addkeyver``, ``setmin``, ``delete``) and prints the table module; ``--check``
exits 1 if the checked-in module differs.  Not needed at test time: the module
is checked in.

franz-go keeps three lines of releases: ZooKeeper brokers (``z21`` ... ``z39``),
KRaft brokers (``b28`` ... ``b42``) and KRaft controllers.  A release's row here
is its broker's: up to 3.9 the ZooKeeper broker's keys and versions, with the
keys only a KRaft broker of that release served added from its KRaft row
(DescribeQuorum, DescribeTopicPartitions: kafka-net is a KRaft node); from 4.0,
when ZooKeeper was removed, the KRaft broker's row alone (franz-go's own
``V4_0_0`` ... ``V4_2_0``).  franz-go's table at :data:`COMMIT` ends at 4.2;
4.3 and 4.4 are :data:`AFTER_FRANZ_GO`'s steps, in franz-go's own vocabulary,
each with its source.  The minimums are franz-go's ``setmin`` calls, which
are KIP-896's removals in 4.0 (and JoinGroup v0-v1's return in 4.1); Produce
keeps an advertised minimum of 0 there (KAFKA-18659,
ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION), as franz-go records it.

The feature levels (KIP-584) are not in franz-go: :data:`FEATURES` below
states them with their sources, for a KRaft node formatted with
``kafka-storage format --standalone`` (kraft.version 1 from 3.9).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULE = REPO / "kafka_net" / "protocol" / "kafka_releases.py"
MIRROR = "/work/.mirror/twmb+franz-go/repo"
COMMIT = "adb3a18abe14bdb230f1cd738d03623301013d42"
SOURCE = "pkg/kversion/requests.go"

RELEASES = ("2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
            "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
            "4.0", "4.1", "4.2", "4.3", "4.4")

# The KRaft broker's steps after franz-go's last release (b42 at COMMIT), as
# (operation, key, version), replayed like franz-go's own.  Sources: the
# version notes of apache/kafka's message JSON and the KIPs named.
AFTER_FRANZ_GO: dict[str, list[tuple[str, int, int]]] = {
    "4.3": [
        ("incmax", 35, 5),   # 5 describe log dirs: IsCordoned KAFKA-19774 KIP-1066
    ],
    "4.4": [
        ("incmax", 28, 6),   # 6 txn offset commit: topic ids KIP-1319
        ("incmax", 42, 3),   # 3 delete groups: per-group ErrorMessage KIP-1331
        ("incmax", 88, 1),   # 1 streams group heartbeat: TopologyDescriptionRequired KIP-1331
        ("incmax", 89, 1),   # 1 streams group describe: IncludeTopologyDescription KIP-1331
        ("addkey", 93, 0),   # 0 update streams group topology description KIP-1331
    ],
}

# name -> (min supported, max supported, finalized on a fresh cluster), per release.
# A release that does not name a feature neither supports nor finalizes it.
#
# metadata.version: BrokerFeatures.defaultSupportedFeatures and MetadataVersion at
#   the release tags of apache/kafka (3.3.0 ... 3.9.0-rc3): from MINIMUM_KRAFT_VERSION
#   (3.0-IV1, 1) to the release's latest (3.3-3.6) or LATEST_PRODUCTION (3.7+);
#   from 4.0 from MINIMUM_VERSION (3.3-IV3, 7); 4.0-IV3 = 25, 4.1-IV1 = 27,
#   4.2-IV1 = 29 (MetadataVersion's enum).  Finalized: the latest production
#   level, what kafka-storage format writes.  None before 3.3 (KIP-778).
# kraft.version: 3.9 (KIP-853; KRaftVersion.KRAFT_VERSION_1 at IBP_3_9_IV0), 1
#   with a --standalone controller.
# transaction.version: TV_1 and TV_2 bootstrap at 4.0 (KIP-890); not advertised
#   in 3.9 (BrokerFeatures leaves out a feature whose production max is 0).
# group.version: GV_1 at 4.0 (KIP-848 GA).
# eligible.leader.replicas.version: ELRV_1 (KIP-966) bootstraps at 4.1-IV0,
#   so a 4.0 cluster formats it at 0 and a 4.1 one at 1.
# share.version: SV_1 (KIP-932) a preview in 4.1 (not production: not advertised),
#   production-ready in 4.2.
# streams.version: SV_1 (KIP-1071) early access in 4.1, GA in 4.2 at 4.2-IV1.
# 4.3: metadata.version 4.3-IV0 = 30 (cordoned log dirs, KIP-1066).
# 4.4: metadata.version 4.4-IV2 = 33 (4.4-IV0 31 share group dead-letter queues,
#   KIP-1191; 4.4-IV1 32 CIDR ACL hosts, KIP-1276; 4.4-IV2 controller
#   unregistration, KIP-1312); share.version SV_2 (dead-letter queues, KIP-1191)
#   production and finalized on a new 4.4 cluster.  (franz-go pkg/kversion
#   features.go at 73358f62f7b7d44400914fd6c9b421445b03c53f records the same.)
_MV = {"3.3": 7, "3.4": 8, "3.5": 11, "3.6": 14, "3.7": 19, "3.8": 20, "3.9": 21,
       "4.0": 25, "4.1": 27, "4.2": 29, "4.3": 30, "4.4": 33}


def _features(release: str) -> dict[str, tuple[int, int, int]]:
    if release not in _MV:
        return {}
    level = _MV[release]
    low = 7 if release >= "4.0" else 1
    features = {"metadata.version": (low, level, level)}
    if release >= "3.9":
        features["kraft.version"] = (0, 1, 1)
    if release >= "4.0":
        features["transaction.version"] = (0, 2, 2)
        features["group.version"] = (0, 1, 1)
        features["eligible.leader.replicas.version"] = (0, 1, 0 if release == "4.0" else 1)
    if release >= "4.2":
        features["share.version"] = (0, 2, 2) if release >= "4.4" else (0, 1, 1)
        features["streams.version"] = (0, 1, 1)
    return features


FEATURES = {release: _features(release) for release in RELEASES}

_FUNC = re.compile(r"^func ([zbc][0-9a-z]+)\(\) \*release \{\n(.*?)^\}", re.S | re.M)
_CALL = re.compile(r"now\.(incmax|addkey|addkeyver|setmin)\(([0-9]+)(?:, ([0-9]+))?\)")
_DELETE = re.compile(r"delete\(now\.reqs, ([0-9]+)\)")
_CLONE = re.compile(r"(?:now|prior) := ([zbc][0-9a-z]+)\(\)(?:\.clone\(|$)", re.M)
_LITERAL = re.compile(r"([0-9]+):\s*\{key: \1(?:, vmax: ([0-9]+))?\}")


def _functions(source: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _FUNC.finditer(source)}


def _replay(name: str, bodies: dict[str, str], memo: dict) -> dict[int, list[int]]:
    """The release function ``name``'s requests: key -> [min, max]."""
    if name in memo:
        return {k: list(v) for k, v in memo[name].items()}
    body = bodies[name]
    base = _CLONE.search(body)
    if base:
        reqs = _replay(base.group(1), bodies, memo)
    elif (alias := re.fullmatch(r"\s*return ([zbc][0-9a-z]+)\(\)\s*", body)):
        reqs = _replay(alias.group(1), bodies, memo)
    else:
        reqs = {int(k): [0, int(v or 0)] for k, v in _LITERAL.findall(body)}
        if not reqs:
            raise SystemExit(f"{name}: no base release and no literal table")
    for line in body.splitlines():
        line = line.split("//", 1)[0]
        if (deleted := _DELETE.search(line)):
            del reqs[int(deleted.group(1))]
        for op, key, value in _CALL.findall(line):
            key = int(key)
            if op == "incmax":
                if reqs[key][1] + 1 != int(value):
                    raise SystemExit(f"{name}: incmax({key}, {value}) skips a version")
                reqs[key][1] = int(value)
            elif op in ("addkey", "addkeyver"):
                if key in reqs:
                    raise SystemExit(f"{name}: key {key} added twice")
                reqs[key] = [0, int(value or 0)]
            else:
                reqs[key][0] = int(value)
    memo[name] = reqs
    return {k: list(v) for k, v in reqs.items()}


def _fn(line: str, release: str) -> str:
    return line + release.replace(".", "")


def _after_franz_go(row: dict[int, list[int]], release: str) -> dict[int, list[int]]:
    """The previous release's row with :data:`AFTER_FRANZ_GO`'s steps for ``release``."""
    row = {k: list(v) for k, v in row.items()}
    for op, key, value in AFTER_FRANZ_GO[release]:
        if op == "incmax":
            if row[key][1] + 1 != value:
                raise SystemExit(f"{release}: incmax({key}, {value}) skips a version")
            row[key][1] = value
        elif key in row:
            raise SystemExit(f"{release}: key {key} added twice")
        else:
            row[key] = [0, value]
    return row


def release_rows(source: str) -> dict[str, dict[int, tuple[int, int]]]:
    bodies = _functions(source)
    memo: dict = {}
    rows = {}
    for release in RELEASES:
        kraft = _fn("b", release)
        if release in AFTER_FRANZ_GO:
            previous = rows[RELEASES[RELEASES.index(release) - 1]]
            row = _after_franz_go({k: list(v) for k, v in previous.items()}, release)
        elif release >= "4.0":
            row = _replay(kraft, bodies, memo)
        else:
            row = _replay(_fn("z", release), bodies, memo)
            if kraft in bodies:
                for key, versions in _replay(kraft, bodies, memo).items():
                    row.setdefault(key, versions)
        rows[release] = {k: (v[0], v[1]) for k, v in sorted(row.items())}
    return rows


def render(rows: dict[str, dict[int, tuple[int, int]]]) -> str:
    out = [
        '"""What each Kafka release 2.1 ... 4.4 served: its broker\'s API versions and',
        "feature levels (``as.version``; docs/operations.md, \"Playing an older Kafka\").",
        "",
        "Generated by docs/make_kafka_releases.py (do not edit by hand) from franz-go's",
        f"{SOURCE} at commit",
        f"{COMMIT}: up to 3.9 the ZooKeeper",
        "broker's APIs plus those only its KRaft broker had, from 4.0 the KRaft broker's;",
        "minimums are KIP-896's (4.0), with Produce's advertised 0 (KAFKA-18659).  4.3",
        "and 4.4, after franz-go's table, are the generator's AFTER_FRANZ_GO steps.  The",
        "feature levels are the generator's FEATURES, with their sources there.",
        "",
        "Sans-IO data: ``APIS[release][api_key] = (min, max)``; ``FEATURES[release][name]",
        "= (min supported, max supported, finalized level)``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'SOURCE = "franz-go {SOURCE} @ {COMMIT}"',
        "",
        "RELEASES: tuple[str, ...] = (",
        "    " + ", ".join(f'"{r}"' for r in RELEASES[:11]) + ",",
        "    " + ", ".join(f'"{r}"' for r in RELEASES[11:]) + ",",
        ")",
        "",
        "APIS: dict[str, dict[int, tuple[int, int]]] = {",
    ]
    for release, row in rows.items():
        out.append(f'    "{release}": {{')
        items = [f"{k}: ({lo}, {hi})," for k, (lo, hi) in row.items()]
        line = "       "
        for item in items:
            if len(line) + 1 + len(item) > 92:
                out.append(line)
                line = "       "
            line += " " + item
        out.append(line)
        out.append("    },")
    out += ["}", "", "FEATURES: dict[str, dict[str, tuple[int, int, int]]] = {"]
    for release in RELEASES:
        features = FEATURES[release]
        if not features:
            out.append(f'    "{release}": {{}},')
            continue
        out.append(f'    "{release}": {{')
        for name, levels in sorted(features.items()):
            out.append(f'        "{name}": {levels},')
        out.append("    },")
    out += ["}", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    git_dir = args[0] if args else MIRROR
    source = subprocess.run(["git", "-C", git_dir, "show", f"{COMMIT}:{SOURCE}"],
                            check=True, capture_output=True, text=True).stdout
    text = render(release_rows(source))
    if check:
        if MODULE.read_text(encoding="utf-8") != text:
            print(f"{MODULE.relative_to(REPO)} is stale: run docs/make_kafka_releases.py")
            return 1
        return 0
    MODULE.write_text(text, encoding="utf-8")
    print(f"wrote {MODULE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
