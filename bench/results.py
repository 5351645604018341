"""RESULTS.md: each group owns the text between its two markers and rewrites only that;
everything outside the markers (the interpretation, written by hand) is left alone.
This module renders facts and tables only."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"

HEADER = """# Benchmark results

Generated sections are written by `python -m bench` (`make bench`) between their
`<!-- bench:GROUP begin/end -->` markers; the text outside the markers is written by hand.
"""


def begin_marker(group: str) -> str:
    return f"<!-- bench:{group} begin -->"


def end_marker(group: str) -> str:
    return f"<!-- bench:{group} end -->"


def update_results(path: Path, group: str, section: str) -> None:
    """Replace the group's section between its markers (or append it), keep the rest."""
    text = path.read_text() if path.exists() else HEADER
    block = f"{begin_marker(group)}\n{section.rstrip()}\n{end_marker(group)}\n"
    begin, end = begin_marker(group), end_marker(group)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def context_lines(context: dict, extra: list[str] = ()) -> list[str]:
    """Date, command, machine and load average of a run, as a bullet list."""
    m = context["machine"]
    return [
        f"- Date: {context['date']}",
        f"- Command: `{context['command']}`",
        f"- Machine: {m['cpus']}; {m['os']}; {m['python']}",
        f"- Load average (1 min) before / after: {context['load_start']:.2f} / "
        f"{context['load_end']:.2f}",
        *extra, ""]


def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    """A Markdown table; columns whose index is in ``right`` are right-aligned."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def rate(x: float) -> str:
    return "-" if x != x else f"{x:,.0f}"


def num(x: float, digits: int = 0) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"
