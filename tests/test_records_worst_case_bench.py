"""bench/records_worst_case.py runs end to end (tiny bound) and keeps RESULTS.md's other sections."""

from __future__ import annotations

import pytest

from bench import records_worst_case as bench

pytestmark = pytest.mark.slow  # thousands of tiny partitions in the many-partition rows

OTHER = "# Benchmark results\n\n<!-- bench:other begin -->\nkept\n<!-- bench:other end -->\n"


def test_small_run_writes_its_section_and_keeps_the_others(tmp_path, capsys):
    out = tmp_path / "RESULTS.md"
    out.write_text(OTHER)
    argv = ["--bound", "8192", "--repeats", "1", "--bounds", "8192", "--output", str(out)]
    assert bench.main(argv) == 0
    text = out.read_text()
    assert text.startswith(OTHER.rstrip("\n"))
    section = text.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0]
    assert "python -m bench.records_worst_case --bound 8192" in section
    rows = [line for line in section.splitlines() if line.startswith("| zeros |")]
    assert len(rows) == 4 and all("| 2 |" in row for row in rows)  # every bomb refused
    assert all("| 0 |" in line for line in section.splitlines()
               if line.startswith(("| tiny |", "| headers |")))
    # A second run replaces the section instead of adding one.
    assert bench.main(argv) == 0
    assert out.read_text().count(bench.BEGIN) == 1 and "kept" in out.read_text()
