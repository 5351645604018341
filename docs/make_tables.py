"""Print the Markdown tables the docs paste in, generated from the code.

    python docs/make_tables.py            # every table
    python docs/make_tables.py mute       # docs/design.md, "The mute state machine"
    python docs/make_tables.py groups     # docs/design.md, "Consumer groups"
    python docs/make_tables.py keys       # docs/operations.md, "Configuration"
    python docs/make_tables.py apis       # docs/features.md, "What it serves"
    python docs/make_tables.py releases   # docs/operations.md, "Playing an older Kafka"
    python docs/make_tables.py versions   # docs/design.md, "API versions: kafka-net, Kafka 2.8, 3.9, 4.2"
    python docs/make_tables.py --check    # exit 1 if a doc holds a stale copy
    python docs/make_tables.py --write    # replace every stale copy in its page

Each table is data in the code (``TRANSITIONS``, ``VALID_PREVIOUS_STATES``,
``KEYS``, ``HANDLERS``, ``kafka_releases``), so the
docs are pasted from here instead of typed by hand.  After changing one of
those, run the script and paste its output over the old table; ``--check``
says whether that is needed.  (The idea is h11's make-state-diagrams.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kafka_net.config import KEYS  # noqa: E402
from kafka_net.network.mute_state import (  # noqa: E402
    TRANSITIONS, ChannelMuteEvent, ChannelMuteState)
from kafka_net.protocol.api_keys import api_name  # noqa: E402
from kafka_net.protocol.kafka_releases import APIS, RELEASES  # noqa: E402
from kafka_net.protocol.messages import MESSAGES  # noqa: E402
from kafka_net.server.apis import HANDLERS, served_versions  # noqa: E402
from kafka_net.server.features import release_features  # noqa: E402
from kafka_net.server.group.state import VALID_PREVIOUS_STATES, GroupState  # noqa: E402


def mute_table() -> str:
    """States down, events across; a cell is the next state, or "raises"."""
    events = list(ChannelMuteEvent)
    lines = ["| state \\ event | " + " | ".join(f"`{e.name}`" for e in events) + " |",
             "|---|" + "---|" * len(events)]
    for state in ChannelMuteState:
        cells = []
        for event in events:
            new = TRANSITIONS.get((state, event))
            cells.append(f"`{new.name}`" if new else "raises")
        lines.append(f"| `{state.name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def groups_table() -> str:
    """Current state down, ``transition_to`` target across; a cell says whether
    the move is legal (Kafka's valid previous states) or raises."""
    lines = ["| state \\ to | " + " | ".join(f"`{s.value}`" for s in GroupState) + " |",
             "|---|" + "---|" * len(GroupState)]
    for state in GroupState:
        cells = ["ok" if state in VALID_PREVIOUS_STATES[target] else "raises"
                 for target in GroupState]
        lines.append(f"| `{state.value}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def keys_table() -> str:
    lines = ["| Key | Default | Meaning |", "|---|---|---|"]
    for key in KEYS:
        default = f"`{key.default}`" if key.default else "(empty)"
        lines.append(f"| `{key.name}` | {default} | {key.doc} |")
    return "\n".join(lines)


def apis_table() -> str:
    """What kafka-net serves (its default: every version it speaks), beside what a
    Kafka 4.4 broker serves (kafka_releases, from the message definitions)."""
    lines = ["| Key | API | Versions served | Kafka 4.4 | Flexible from |",
             "|---:|---|---|---|---|"]
    for key, module in sorted(HANDLERS.items()):
        versions = module.VERSIONS
        flexible = MESSAGES[key].request.flexible
        first_flexible = (max(flexible.low, versions.low)
                          if flexible.high is None or flexible.high >= flexible.low else None)
        if first_flexible is not None and first_flexible > versions.high:
            first_flexible = None
        kafka = APIS["4.4"].get(key)
        lines.append(f"| {key} | {api_name(key)} | {versions.low}-{versions.high} | "
                     f"{f'{kafka[0]}-{kafka[1]}' if kafka else '-'} | "
                     f"{'v' + str(first_flexible) if first_flexible is not None else '-'} |")
    return "\n".join(lines)


def versions_table() -> str:
    """Per API, the versions kafka-net advertises by default and with
    ``--as-version`` 2.8, 3.9 and 4.2 (the overlap with what that release served)."""
    plays = ("2.8", "3.9", "4.2")
    served = {release: served_versions(HANDLERS, release) for release in plays}
    lines = ["| Key | API | default | " + " | ".join(f"as {r}" for r in plays) + " |",
             "|---:|---|---|" + "---|" * len(plays)]
    for key, module in sorted(HANDLERS.items()):
        cells = []
        for release in plays:
            v = served[release].get(key)
            cells.append(f"{v.low}-{v.high}" if v is not None else "-")
        lines.append(f"| {key} | {api_name(key)} | {module.VERSIONS.low}-{module.VERSIONS.high}"
                     f" | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def releases_table() -> str:
    """Per Kafka release (as.version): how many APIs kafka-net advertises, which of
    them the release before lacked (or had: "no X"), and the features it finalizes."""
    lines = ["| as.version | APIs | Changed since the release before | Features finalized |",
             "|---|---:|---|---|"]
    before: dict = {}
    for release in RELEASES:
        served = served_versions(HANDLERS, release)
        added = [api_name(k) for k in served if k not in before] if before else ["(base)"]
        added += [f"no {api_name(k)}" for k in before if k not in served]
        _, finalized = release_features(release)
        levels = ", ".join(f"{n} {v}" for n, v in sorted(finalized.items()) if v) or "-"
        lines.append(f"| {release} | {len(served)} | {', '.join(added) or '-'} | {levels} |")
        before = served
    return "\n".join(lines)


TABLES = {"mute": mute_table, "groups": groups_table, "keys": keys_table, "apis": apis_table,
          "releases": releases_table, "versions": versions_table}
WHERE = {"mute": "docs/design.md", "groups": "docs/design.md", "keys": "docs/operations.md",
         "apis": "docs/features.md", "releases": "docs/operations.md",
         "versions": "docs/design.md"}


def check() -> int:
    stale = [name for name, make in TABLES.items()
             if make() not in (REPO / WHERE[name]).read_text(encoding="utf-8")]
    for name in stale:
        print(f"{WHERE[name]}: the '{name}' table is stale; "
              f"run: python docs/make_tables.py --write")
    return 1 if stale else 0


def write() -> int:
    """Replace each table in its page with a fresh copy: the block of ``|`` lines
    with the same header, else the one sharing most lines with the fresh table
    (a header whose release column moved on)."""
    for name, make in TABLES.items():
        path = REPO / WHERE[name]
        fresh = make().splitlines()
        lines = path.read_text(encoding="utf-8").splitlines()
        blocks, i = [], 0
        while i < len(lines):
            if lines[i].startswith("|"):
                j = i
                while j < len(lines) and lines[j].startswith("|"):
                    j += 1
                blocks.append((i, j))
                i = j
            else:
                i += 1
        same = [b for b in blocks if lines[b[0]] == fresh[0]]
        start, end = same[0] if same else max(
            blocks, key=lambda b: len(set(lines[b[0]:b[1]]) & set(fresh)))
        if lines[start:end] != fresh:
            lines[start:end] = fresh
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            print(f"{WHERE[name]}: '{name}' table rewritten")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return check()
    if argv == ["--write"]:
        return write()
    names = argv or list(TABLES)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        print(f"unknown table(s) {', '.join(unknown)}; choose from {', '.join(TABLES)}",
              file=sys.stderr)
        return 2
    print("\n\n".join(TABLES[n]() for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
