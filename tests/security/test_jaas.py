"""Kafka's JAAS config syntax: the parser, its error messages, and a Hypothesis
round trip through the quoting rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_net.security import jaas

MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_a_plain_login_module_entry():
    entry = jaas.parse_single(
        f'{MODULE} required\n  username="admin" password="admin-secret"\n'
        '  user_alice="alice-secret" user_bob=bob-secret; // the users')
    assert entry.login_module == MODULE and entry.control_flag == "REQUIRED"
    assert entry.options == {"username": "admin", "password": "admin-secret",
                             "user_alice": "alice-secret", "user_bob": "bob-secret"}


def test_comments_escapes_and_flag_case():
    entry = jaas.parse_single(f'/* c */ {MODULE} Optional a="x\\"y\\\\z" /* b="no" */;')
    assert entry.control_flag == "OPTIONAL" and entry.options == {"a": 'x"y\\z'}


@pytest.mark.parametrize("text, message", [
    ("", "Login module not specified in JAAS config"),
    ("// only a comment", "Login module not specified in JAAS config"),
    (MODULE, "Login module control flag not specified in JAAS config"),
    (f"{MODULE} always;", "Invalid login module control flag 'always' in JAAS config"),
    (f"{MODULE} required a=;", "Value not specified for key 'a' in JAAS config"),
    (f"{MODULE} required a;", "Value not specified for key 'a' in JAAS config"),
    (f'{MODULE} required a="b"', "JAAS config entry not terminated by semi-colon"),
    (f"{MODULE} required; {MODULE} required;",
     "JAAS config property contains 2 login modules, should be 1 module"),
])
def test_kafkas_error_messages(text, message):
    with pytest.raises(jaas.JaasConfigError) as info:
        jaas.parse_single(text)
    assert str(info.value) == message


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
values = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)),
                 max_size=20)


@given(st.dictionaries(keys, values, max_size=6))
def test_quoted_options_round_trip(options):
    text = f"{MODULE} required " + " ".join(f"{k}={quote(v)}" for k, v in options.items()) + ";"
    assert jaas.parse_single(text).options == options


@given(st.text(max_size=80))
def test_any_text_parses_or_raises_a_jaas_error(text):
    try:
        jaas.parse(text)
    except jaas.JaasConfigError:
        pass


def test_word_characters_are_kafkas_stream_tokenizer_word_characters():
    # Kafka's JaasConfig tokenizer: wordChars('a','z'), ('A','Z'), ('0','9'), '.',
    # '-', '_', '$', and StreamTokenizer's own 0xA0..0xFF (here every character from
    # 0xA0 up).  Checked for every code point that is not white space (read first).
    ascii_words = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_$")
    wrong = [hex(c) for c in range(0x110000) if not chr(c).isspace()
             and (jaas._TOKEN.match(chr(c)).lastgroup == "word")
             != (chr(c) in ascii_words or c >= 0xA0)]
    assert wrong == []
