"""Kafka's JAAS config syntax (``sasl.jaas.config``; Kafka's JaasConfig, which
reads it with java.io.StreamTokenizer)::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

One entry: a login module class, a control flag (required, requisite,
sufficient, optional: any case), options ``key=value`` (a value is a word or
a double-quoted string with backslash escapes), then ';'.  ``//`` and
``/* */`` comments are skipped.  Errors carry Kafka's messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


class JaasConfigError(ValueError):
    pass


@dataclass(frozen=True)
class AppConfigurationEntry:
    """One login module of a JAAS configuration: its class name, control flag and
    options."""

    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


# StreamTokenizer as Kafka sets it up: words of letters, digits, '.', '-', '_',
# '$' (plus anything >= 0xA0); quoted strings; every other character a token of its own.
# ">= 0xA0" is written as "not in \x00-\x9f": the same characters, but the range
# [\u00a0-\U0010ffff] took re several milliseconds to compile, at every start.
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n\r]*|/\*.*?(?:\*/|\Z))
  | "(?P<quoted>(?:[^"\\\n\r]|\\.)*)(?:"|(?=[\n\r])|\Z)
  | (?P<word>(?:[A-Za-z0-9.\-_$]|[^\x00-\x9f])+)
  | (?P<char>.)
""", re.X | re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), text, flags=re.S)


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: kind is 'word' (words and quoted strings) or 'char'."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        if m["quoted"] is not None:
            out.append(("word", _unescape(m["quoted"])))
        elif m["word"] is not None:
            out.append(("word", m["word"]))
        elif m["char"] is not None:
            out.append(("char", m["char"]))
    return out


def parse(text: str) -> list[AppConfigurationEntry]:
    """Every entry of a JAAS config text; raises JaasConfigError."""
    toks = tokens(text)
    entries = []
    i = 0
    while i < len(toks):
        entry, i = _entry(toks, i)
        entries.append(entry)
    if not entries:
        raise JaasConfigError("Login module not specified in JAAS config")
    return entries


def parse_single(text: str, key: str = "sasl.jaas.config") -> AppConfigurationEntry:
    """A ``sasl.jaas.config`` value: exactly one entry (Kafka's JaasContext)."""
    entries = parse(text)
    if len(entries) != 1:
        raise JaasConfigError(f"JAAS config property contains {len(entries)} login modules, "
                              "should be 1 module")
    return entries[0]


def _entry(toks, i: int) -> tuple[AppConfigurationEntry, int]:
    kind, module = toks[i]
    if kind != "word":
        raise JaasConfigError(f"Login module class expected in JAAS config, got '{module}'")
    i += 1
    if i >= len(toks):
        raise JaasConfigError("Login module control flag not specified in JAAS config")
    flag = toks[i][1]
    if toks[i][0] != "word" or flag.upper() not in CONTROL_FLAGS:
        raise JaasConfigError(f"Invalid login module control flag '{flag}' in JAAS config")
    i += 1
    options: dict[str, str] = {}
    while i < len(toks) and toks[i] != ("char", ";"):
        key = toks[i][1]
        if not (i + 2 < len(toks) and toks[i + 1] == ("char", "=")
                and toks[i + 2][0] == "word"):
            raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config")
        options[key] = toks[i + 2][1]
        i += 3
    if i >= len(toks):
        raise JaasConfigError("JAAS config entry not terminated by semi-colon")
    return AppConfigurationEntry(module, flag.upper(), options), i + 1
