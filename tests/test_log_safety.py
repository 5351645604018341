"""log_safety: client text is one visible line; repeated lines are rate-limited."""

from __future__ import annotations

import logging

from hypothesis import given, strategies as st

from kafka_net.log_safety import RateLimitedLog, escape


def test_newlines_and_control_characters_are_escaped():
    assert escape("a\nb\r\tc\x00\x1b[31m") == "a\\nb\\r\\tc\\x00\\x1b[31m"


def test_backslash_is_escaped_so_an_escape_cannot_be_forged():
    assert escape("a\\nb") == "a\\\\nb"
    assert escape("a\\nb") != escape("a\nb")


def test_plain_text_is_unchanged_and_none_is_visible():
    assert escape("rdkafka-producer-1") == "rdkafka-producer-1"
    assert escape(None) == "None"


def test_long_text_is_cut():
    assert escape("x" * 1000, limit=10) == "x" * 10 + "..."


@given(st.text())
def test_escaped_text_is_always_one_printable_line(text):
    out = escape(text, limit=10_000)
    assert "\n" not in out and "\r" not in out
    assert out.isprintable()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_interval_per_kind_and_the_count_of_the_rest(caplog):
    clock = _Clock()
    limited = RateLimitedLog(logging.getLogger("t.rl"), interval_s=10, clock=clock)
    with caplog.at_level(logging.INFO, logger="t.rl"):
        written = [limited.log(logging.INFO, "ip1", "rejected %s", "ip1") for _ in range(5)]
        limited.log(logging.INFO, "ip2", "rejected %s", "ip2")
        clock.now = 11
        limited.log(logging.INFO, "ip1", "rejected %s", "ip1")
    assert written == [True, False, False, False, False]
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["rejected ip1", "rejected ip2",
                     "rejected ip1 (4 similar message(s) suppressed since the last one)"]


def test_kinds_remembered_are_bounded():
    clock = _Clock()
    limited = RateLimitedLog(logging.getLogger("t.rl2"), interval_s=10, max_kinds=3,
                             clock=clock)
    for i in range(100):
        clock.now = i * 0.001
        limited.log(logging.DEBUG, i, "x")
    assert len(limited._last) <= 3
