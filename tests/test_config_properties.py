"""kafka_net.config's reader of Java's ``.properties`` format (``parse_properties``):
comments, separators, continuations, escapes and line endings as
java.util.Properties reads them, and Hypothesis properties (it never raises
anything but ConfigError, and maps round-trip).  The keys and defaults are in
test_config.py, the listeners in test_config_listeners.py.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_net.config import KEYS, ConfigError, ServerConfig, parse_properties


# --- the .properties format -------------------------------------------------------------


def test_comments_and_blank_lines_are_skipped():
    text = "# a comment\n! another\n   # indented comment\n\n   \n\t\nkey=value\n"
    assert parse_properties(text) == {"key": "value"}


@pytest.mark.parametrize("line", [
    "key=value", "key = value", "key:value", "key : value", "key value", "key\tvalue",
    "key\fvalue", "   key=value", "key   value", "key \t= \tvalue",
])
def test_separators(line):
    assert parse_properties(line) == {"key": "value"}


def test_only_the_first_separator_counts():
    assert parse_properties("listeners=PLAINTEXT://host:9092") == {
        "listeners": "PLAINTEXT://host:9092"}
    assert parse_properties("a==b") == {"a": "=b"}
    assert parse_properties("a=:b") == {"a": ":b"}
    assert parse_properties("a b c") == {"a": "b c"}


def test_key_without_value():
    assert parse_properties("alone\nempty=\ncolon:") == {"alone": "", "empty": "", "colon": ""}


def test_trailing_whitespace_of_a_value_is_kept_and_leading_is_not():
    assert parse_properties("k =   v  ") == {"k": "v  "}


def test_backslash_continues_a_line_and_the_next_line_loses_its_indent():
    text = "listeners=PLAINTEXT://127.0.0.1:9092,\\\n          OTHER://127.0.0.1:9093\nnext=1"
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://127.0.0.1:9092,OTHER://127.0.0.1:9093", "next": "1"}


def test_continuation_over_several_lines():
    assert parse_properties("k=a\\\n b\\\n  c") == {"k": "abc"}


def test_even_number_of_trailing_backslashes_is_an_escaped_backslash():
    assert parse_properties("k=a\\\\\nnext=1") == {"k": "a\\", "next": "1"}
    assert parse_properties("k=a\\\\\\\nb") == {"k": "a\\b"}


def test_a_comment_marker_inside_a_continuation_is_text():
    assert parse_properties("k=a\\\n# not a comment") == {"k": "a# not a comment"}


def test_a_blank_line_ends_a_continuation():
    assert parse_properties("k=a\\\n\nb=c") == {"k": "a", "b": "c"}


def test_continuation_at_end_of_file():
    assert parse_properties("k=a\\") == {"k": "a"}


@pytest.mark.parametrize("text", ["a=1\r\nb=2", "a=1\rb=2", "a=1\nb=2\n"])
def test_line_endings(text):
    assert parse_properties(text) == {"a": "1", "b": "2"}


@pytest.mark.parametrize("char", ["\f", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_only_cr_and_lf_end_a_line(char):
    # str.splitlines() would split at each of these; java.util.Properties does not.
    assert parse_properties(f"k=a{char}b") == {"k": f"a{char}b"}


@pytest.mark.parametrize("escaped, expected", [
    (r"\t", "\t"), (r"\n", "\n"), (r"\r", "\r"), (r"\f", "\f"), (r"\\", "\\"),
    (r"\u0041", "A"), (r"\u00e9", "é"), (r"\u4e2d\u6587", "中文"),
    (r"\uD83D\uDE00", "\U0001F600"),          # a UTF-16 surrogate pair is one character
    (r"\q", "q"), (r"\=", "="), (r"\:", ":"), (r"\#", "#"), (r"\ ", " "),
    (r"\u12", "u12"), (r"\uZZZZ", "uZZZZ"),   # malformed \u: read leniently, no error
])
def test_escapes_in_values(escaped, expected):
    assert parse_properties("k=" + escaped) == {"k": expected}


@pytest.mark.parametrize("line, key, value", [
    (r"my\ key=v", "my key", "v"),
    (r"a\=b=c", "a=b", "c"),
    (r"a\:b:c", "a:b", "c"),
    (r"\#not.a.comment=1", "#not.a.comment", "1"),
    (r"\!bang=1", "!bang", "1"),
    (r"tab\tkey v", "tab\tkey", "v"),
    (r"\u006eode.id=3", "node.id", "3"),
])
def test_keys_with_escaped_separators(line, key, value):
    assert parse_properties(line) == {key: value}


def test_a_later_key_wins():
    assert parse_properties("k=1\nk=2") == {"k": "2"}


def test_leading_space_of_a_value_can_be_escaped():
    assert parse_properties(r"k=\ v") == {"k": " v"}


# --- Hypothesis ----------------------------------------------------------------------

# Characters the format treats specially, mixed in so that the interesting
# cases (escapes, separators, continuations) come up often.
_SPECIAL = st.sampled_from(list("\\=: \t\f\r\n#!u0aF") + ["\r\n", "\\u", "\\\n"])
_ANY_TEXT = st.lists(st.one_of(_SPECIAL, st.characters(blacklist_categories=())),
                     max_size=60).map("".join)


@given(_ANY_TEXT)
@example("\\")
@example("\\u")
@example("=\\\n")
@example("\ud83d")            # a lone surrogate
@example("k=\\uD83D")
def test_parse_properties_never_raises(text):
    props = parse_properties(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in props.items())


_SIMPLE_KEY = st.from_regex(r"[a-z][a-z0-9._-]{0,30}", fullmatch=True)
_SIMPLE_VALUE = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters="\\"),
    max_size=40).filter(lambda v: v == v.lstrip())


@given(st.dictionaries(_SIMPLE_KEY, _SIMPLE_VALUE, max_size=10))
def test_simple_key_value_maps_round_trip(props):
    text = "\n".join(f"{k}={v}" for k, v in props.items())
    assert parse_properties(text) == props


def _escape(s: str, is_key: bool) -> str:
    """Write ``s`` so that java.util.Properties reads it back unchanged."""
    out = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c == " " and (is_key or i == 0):
            out.append("\\ ")
        elif is_key and (c in "=:" or (i == 0 and c in "#!")):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=20), st.text(max_size=40), max_size=8))
def test_any_map_round_trips_when_escaped(props):
    text = "\r\n".join(f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items())
    assert parse_properties(text) == props


_KEY_NAMES = st.sampled_from(
    [k.name for k in KEYS] + ["broker.id", "log.dirs", "listener.name.x.y", "bogus.key"])


@given(st.dictionaries(_KEY_NAMES, st.one_of(_ANY_TEXT, st.from_regex(r"-?[0-9]{1,12}")),
                       max_size=6))
def test_from_properties_raises_only_config_error(props):
    try:
        ServerConfig.from_properties(props)
    except ConfigError:
        pass
