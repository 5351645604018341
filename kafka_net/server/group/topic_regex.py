"""Regular-expression subscriptions of consumer-protocol groups (KIP-848):
compiling a member's ``SubscribedTopicRegex`` and resolving it to topics.

Kafka compiles the pattern with RE2/J (``com.google.re2j.Pattern``) and a
topic matches when the *whole* name matches (``matcher(name).matches()``).
kafka-net compiles it with RE2 itself, through the ``google-re2`` binding
(RE2/J is the Java port of RE2: the same syntax and the same guarantee that
matching takes time linear in the name, whatever the pattern).

Why not Python's ``re``?  It is a backtracking engine whose syntax differs
from RE2's both ways:

* ``re`` accepts what RE2 refuses: back-references (``\\1``, ``(?P=n)``),
  look-ahead and look-behind (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), atomic
  groups ``(?>...)``, possessive quantifiers (``a*+``) and conditionals
  ``(?(1)a|b)``.  Kafka answers those with INVALID_REGULAR_EXPRESSION; with
  ``re`` a client would get an assignment here and an error from Kafka.
* RE2 accepts what ``re`` refuses or reads otherwise: ``\\z`` (end of text),
  ``\\Q...\\E`` (literal text), ``\\pL`` / ``\\p{Greek}`` (Unicode classes),
  ``[[:alpha:]]`` (POSIX classes), the flag ``(?U)`` (non-greedy by
  default in RE2; in ``re`` it is the Unicode flag).
* ``re`` backtracks: a pattern such as ``(a|a)*b`` takes time exponential in
  the length of a topic name, and a match holds the interpreter lock, so one
  heartbeat could stall the whole broker.  RE2 never backtracks.

A translation of ``re`` could refuse the first list and rewrite most of the
second, but not the third; the binding is one small wheel (about 1.6 MB
installed, no dependencies) for CPython 3.9 and later on Linux, macOS and
Windows.

A pattern RE2 cannot compile is answered, as Kafka does, with
INVALID_REGULAR_EXPRESSION: "SubscribedTopicRegex `<regex>` is not a valid
regular expression: <RE2's reason>." (the reason in C++ RE2's words, which
differ from RE2/J's Go-derived ones: "missing )" for "missing closing )").
RE2's own size limit (8 MiB of
compiled program) bounds what a client can make the broker build.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Iterable

from kafka_net.protocol.error_codes import ErrorCode


@functools.lru_cache(maxsize=1)
def _re2():
    """google-re2 and its options, imported on the first regex: a broker whose
    groups never send one starts (and its tests run) without it."""
    import re2
    options = re2.Options()
    options.log_errors = False   # RE2 would print every refused pattern to stderr
    return re2, options


class InvalidRegularExpression(Exception):
    """Kafka's InvalidRegularExpression: the error code travels with it."""

    error_code = ErrorCode.INVALID_REGULAR_EXPRESSION


def compile_regex(regex: str):
    """The compiled pattern, or InvalidRegularExpression with RE2's reason.
    Not cached: a compiled pattern may take up to RE2's memory budget, and the
    coordinator compiles a regex only when it is new to a group and at a
    refresh (at most every 10 s per group), as Kafka does."""
    re2, options = _re2()
    try:
        return re2.compile(regex, options=options)
    except re2.error as e:
        reason = e.args[0] if e.args else str(e)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidRegularExpression(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
            f"{reason}.") from None


@dataclass(frozen=True)
class ResolvedRegularExpression:
    """Kafka's ResolvedRegularExpression: the topics a regex matched, the
    metadata version it was resolved against and when (monotonic seconds)."""

    topics: frozenset[str]
    version: int
    resolved_at: float


def resolve(regexes: Iterable[str], topic_names: Iterable[str],
            authorized: Callable[[dict[str, int]], set[str]] | None = None
            ) -> dict[str, frozenset[str]]:
    """Each regex -> the topics whose whole name it matches, less those the
    member may not DESCRIBE (``authorized`` gets each matched topic with how
    many regexes matched it, and returns the allowed ones: Kafka's
    filterTopicDescribeAuthorizedTopics).  A regex that does not compile (it
    was checked when it arrived, so it should not happen) resolves to nothing."""
    compiled = {}
    for regex in regexes:
        try:
            compiled[regex] = compile_regex(regex)
        except InvalidRegularExpression:
            compiled[regex] = None
    matched: dict[str, set[str]] = {regex: set() for regex in compiled}
    for name in topic_names:
        for regex, pattern in compiled.items():
            if pattern is not None and pattern.fullmatch(name):
                matched[regex].add(name)
    if authorized is not None:
        counts: dict[str, int] = {}
        for names in matched.values():
            for name in names:
                counts[name] = counts.get(name, 0) + 1
        allowed = authorized(counts) if counts else set()
        matched = {regex: names & allowed for regex, names in matched.items()}
    return {regex: frozenset(names) for regex, names in matched.items()}


__all__ = ["InvalidRegularExpression", "ResolvedRegularExpression", "compile_regex",
           "resolve"]
