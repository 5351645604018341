"""ListTransactions v2's transactional-id pattern read as java.util.regex reads
it (Kafka 4.2's Pattern.compile(...).matcher(id).matches())."""

from __future__ import annotations

import pytest

from kafka_net.server.transaction.id_pattern import (
    InvalidPattern, compile_transactional_id_pattern as compile_pattern)


@pytest.mark.parametrize("pattern, matching, other", [
    ("orders-.*", "orders-1", "xorders-1"),               # the whole id
    ("(?!test-).*", "orders", "test-1"),                 # look-ahead: RE2 refuses it
    ("(a)-\\1", "a-a", "a-b"),                           # back-reference
    ("(?<kind>[a-z]+)-\\k<kind>", "ab-ab", "ab-cd"),     # Java's named groups
    ("\\Qa.b*\\E-\\d+", "a.b*-12", "axbb-12"),           # quoted text
    ("\\p{Lower}+\\P{Alpha}", "abc1", "abcD"),           # POSIX classes
    ("[\\p{Digit}x]+", "1x2", "1y2"),
    ("tx-(?i)abc", "tx-ABC", "TX-abc"),                  # flags from there on
    ("a(?i)b|c", "C", "A"),                              # ... across |
    ("(?:x(?i)y)z", "xYz", "xYZ"),                       # ... to the group's end
    ("\\w+", "ab_1", "é"),                               # \\w is ASCII, as Java's
    ("(?U)\\w+", "é", "-"),                              # unless (?U)
    ("a{2,}\\z", "aaa", "a"),
    ("a++b", "aab", "ab "),                              # possessive
])
def test_java_syntax_means_what_it_means_in_kafka(pattern, matching, other):
    matches = compile_pattern(pattern)
    assert matches(matching) and not matches(other)


@pytest.mark.parametrize("pattern", [
    "orders-(", "a)", "tx-{foo}", "a{", "(?P<n>a)", "(?P=n)", "(?(1)a|b)", "(?#c)a",
    "[a-z&&[^x]]", "[a[b]]", "\\p{L}", "\\h", "(?q)a", "a\\",
])
def test_what_java_refuses_or_this_cannot_read_is_refused(pattern):
    with pytest.raises(InvalidPattern):
        compile_pattern(pattern)
