"""The docs say what the code does: generated tables are current, and every
kafka-net symbol docs/name-map.md names exists."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_make_tables_check_finds_no_stale_table():
    result = subprocess.run([sys.executable, str(REPO / "docs" / "make_tables.py"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.interop
def test_the_journey_page_is_what_a_real_run_shows():
    """docs/journey.md, regenerated from a confluent-kafka Produce, differs from the
    page only in its numbers; and the page's timings add up."""
    result = subprocess.run([sys.executable, str(REPO / "docs" / "make_journey.py"),
                             "--check"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    page = (REPO / "docs" / "journey.md").read_text(encoding="utf-8")
    line = json.loads(page.split("Completed request:", 1)[1].split("```", 1)[0])
    parts = sum(line[k] for k in ("requestQueueTimeMs", "localTimeMs", "remoteTimeMs",
                                  "responseQueueTimeMs", "sendTimeMs"))
    assert parts == pytest.approx(line["totalTimeMs"], abs=0.005)


def _name_map_symbols() -> list[str]:
    """The kafka-net column of docs/name-map.md: `kafka_net.module.Class.attr` names."""
    text = (REPO / "docs" / "name-map.md").read_text(encoding="utf-8")
    symbols = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("Kafka", "---"):
            symbols += re.findall(r"`(kafka_net\.[\w.]+)`", cells[1])
    return symbols


def _resolve(symbol: str):
    """Import the longest module prefix of ``symbol``, then getattr the rest."""
    parts = symbol.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(symbol)


def test_the_name_map_names_many_symbols():
    assert len(_name_map_symbols()) >= 30


@pytest.mark.parametrize("symbol", _name_map_symbols())
def test_every_symbol_in_the_name_map_exists(symbol):
    _resolve(symbol)


def _pages() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_of_a_page_resolves(page):
    """The README was split into docs/ pages: a link written for one folder and
    left in the other would lead nowhere."""
    text = re.sub(r"`[^`\n]*`", "", page.read_text(encoding="utf-8"))   # code is no link
    targets = [t for t in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
               if not re.match(r"[a-z]+:", t)]
    assert [t for t in targets if not (page.parent / t).exists()] == []
