"""The compiled fast paths of the checkout: setup.py builds every
``kafka_net/**/_*.pyx`` (issue 29).  One list for the tests that check they are
built, shipped, imported, or left alone in a readable run."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compiled_paths() -> list[str]:
    """Their sources' paths without suffix: ``kafka_net/protocol/_walk`` ..."""
    paths = sorted(str(p.relative_to(REPO).with_suffix("")) for p in
                   (REPO / "kafka_net").rglob("_*.pyx"))
    assert paths, "no kafka_net/**/_*.pyx: the test that asks checks nothing"
    return paths


def compiled_modules() -> list[str]:
    """Their module names: ``kafka_net.protocol._walk`` ..."""
    return [p.replace("/", ".") for p in compiled_paths()]
