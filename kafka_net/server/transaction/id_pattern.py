"""ListTransactions v2's ``transactional_id_pattern`` (KIP-1152), read as Kafka reads it.

Kafka 4.2 compiles the pattern with ``java.util.regex.Pattern`` (a
``PatternSyntaxException`` is answered INVALID_REGULAR_EXPRESSION) and lists a
transactional id when the *whole* id matches (``matcher(id).matches()``).
That is not RE2/J, which the consumer protocol's topic regexes use
(:mod:`kafka_net.server.group.topic_regex`): java.util.regex is a
backtracking engine, so it accepts look-ahead and look-behind, back-references,
atomic groups and possessive quantifiers, which RE2 refuses.  The closest
well-defined engine here is therefore Python's ``re`` (also backtracking, with
all of those since 3.11), fed a translation of the Java syntax it reads
otherwise:

* ``\\Q...\\E`` (quoted text) becomes the escaped text; ``\\z`` becomes
  ``re``'s ``\\Z`` (end of input); Java's ``\\Z`` (end, or before a final line
  terminator) a look-ahead saying so;
* named groups ``(?<name>...)`` and ``\\k<name>`` become ``(?P<name>...)`` and
  ``(?P=name)``;
* the POSIX classes ``\\p{Lower}``, ``\\p{Alpha}``, ``\\p{Punct}``... (US-ASCII
  in Java) and their ``\\P{...}`` negations become explicit classes;
* an inline flag group ``(?i)`` in mid-pattern applies from there on in Java
  (``re`` wants global flags first): it becomes a scoped ``(?i:...)`` closed at
  the end of its group and around each ``|``;
* the pattern is compiled with ``re.ASCII``: Java's ``\\w``, ``\\d``, ``\\s``,
  ``\\b`` and case-insensitivity are ASCII unless ``(?U)`` / ``(?u)`` ask for
  Unicode, which here then apply to the whole pattern;
* a ``{`` that does not open a ``{n}``, ``{n,}`` or ``{n,m}`` quantifier is an
  error in Java ("Illegal repetition") and a literal in ``re``: refused.

Syntax that only ``re`` has is refused, as Java refuses it: ``(?P...)``,
conditionals ``(?(1)a|b)``, comments ``(?#...)``.  What Java accepts and this
refuses (answered INVALID_REGULAR_EXPRESSION where Kafka would list): Unicode
property classes other than the POSIX ones (``\\p{L}``, ``\\p{IsLatin}``,
``\\p{javaLowerCase}``), ``\\P{...}`` inside a character class, class unions
and intersections (``[a-z[0-9]]``, ``[a-z&&[^x]]``) and the escapes ``\\h``,
``\\R``, ``\\X``, ``\\G``.  Left as ``re`` reads them: ``.`` and ``$`` treat only
``\\n`` as a line terminator (Java also ``\\r``, ``\\u0085``, ``\\u2028``,
``\\u2029``), ``(?x)`` does not ignore blanks inside a character class.  As in
Kafka, a pattern can backtrack for long; transactional ids are short and the
pattern comes from an admin request.
"""

from __future__ import annotations

import re
from typing import Callable

# Java's POSIX character classes (java.util.regex.Pattern, US-ASCII).
_PUNCT = re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_POSIX = {
    "Lower": "a-z", "Upper": "A-Z", "ASCII": "\\x00-\\x7f", "Alpha": "a-zA-Z",
    "Digit": "0-9", "Alnum": "a-zA-Z0-9", "Punct": _PUNCT,
    "Graph": "a-zA-Z0-9" + _PUNCT, "Print": "\\x20a-zA-Z0-9" + _PUNCT,
    "Blank": " \\t", "Cntrl": "\\x00-\\x1f\\x7f", "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_JAVA_FLAGS = set("idmsuxU")
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([):])")
_JAVA_END = "(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?\\Z)"


class InvalidPattern(Exception):
    """A pattern java.util.regex would refuse (or this translation cannot read)."""


def compile_transactional_id_pattern(pattern: str) -> Callable[[str], bool]:
    """A predicate: does the whole transactional id match ``pattern``?"""
    translated, unicode = _Translator(pattern).run()
    try:
        compiled = re.compile(translated, 0 if unicode else re.ASCII)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InvalidPattern(str(exc)) from None
    return lambda transactional_id: compiled.fullmatch(transactional_id) is not None


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p, self.i, self.out = pattern, 0, []
        self.in_class = False
        self.scopes: list[list[str]] = [[]]   # per open group: flag scopes opened in it
        self.unicode = False

    def run(self) -> tuple[str, bool]:
        while self.i < len(self.p):
            self._step()
        self.out.append(")" * len(self.scopes[-1]))
        return "".join(self.out), self.unicode

    def _step(self) -> None:
        p, i, c = self.p, self.i, self.p[self.i]
        if c == "\\":
            self._escape()
        elif self.in_class:
            if c == "[" or p.startswith("&&", i):
                raise InvalidPattern("character class unions and intersections")
            if c == "]":
                self.in_class = False
            self._emit(c)
        elif c == "[":
            self.in_class = True
            self._emit(c)
            if p.startswith("^", self.i):
                self._emit("^")
            if p.startswith("]", self.i):   # a leading ] is a literal, as in Java
                self._emit("\\]")
        elif c == "(":
            self._group()
        elif c == ")":
            if len(self.scopes) == 1:
                raise InvalidPattern("Unmatched closing ')'")
            self._emit(")" * len(self.scopes.pop()) + ")", 1)
        elif c == "|":
            scopes = self.scopes[-1]
            self._emit(")" * len(scopes) + "|" + "".join(scopes), 1)
        elif c == "{":
            match = _QUANTIFIER.match(p, i)
            if match is None:
                raise InvalidPattern(f"Illegal repetition near index {i}")
            self._emit(match.group())
        else:
            self._emit(c)

    def _emit(self, text: str, consumed: int | None = None) -> None:
        self.out.append(text)
        self.i += len(text) if consumed is None else consumed

    def _escape(self) -> None:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise InvalidPattern(f"Unexpected internal error near index {i}")
        d = p[i + 1]
        if d == "Q":
            end = p.find("\\E", i + 2)
            literal = p[i + 2:] if end < 0 else p[i + 2:end]
            self._emit(re.escape(literal), (len(p) if end < 0 else end + 2) - i)
        elif d == "z" and not self.in_class:
            self._emit("\\Z", 2)
        elif d == "Z" and not self.in_class:
            self._emit(_JAVA_END, 2)
        elif d == "k" and p.startswith("<", i + 2):
            end = p.find(">", i + 3)
            if end < 0:
                raise InvalidPattern("named capturing group is missing trailing '>'")
            self._emit(f"(?P={p[i + 3:end]})", end + 1 - i)
        elif d in "pP":
            self._posix_class(d == "P")
        elif d in "hHRXGv" or d == "V":
            raise InvalidPattern(f"\\{d} is not supported here")
        else:
            self._emit(p[i:i + 2])

    def _posix_class(self, negated: bool) -> None:
        p, i = self.p, self.i
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            name, consumed = (p[i + 3:end], end + 1 - i) if end > 0 else ("", 2)
        else:
            name, consumed = p[i + 2:i + 3], 3
        body = _POSIX.get(name.removeprefix("Is"))
        if body is None:
            raise InvalidPattern(f"Unknown character property name {{{name}}}")
        if self.in_class:
            if negated:
                raise InvalidPattern("\\P{...} inside a character class")
            self._emit(body, consumed)
        else:
            self._emit(f"[{'^' if negated else ''}{body}]", consumed)

    def _group(self) -> None:
        p, i = self.p, self.i
        if not p.startswith("(?", i):
            self.scopes.append([])
            self._emit("(")
            return
        kind = p[i + 2:i + 3]
        if kind in ("P", "(", "#"):
            raise InvalidPattern(f"Unknown inline modifier near index {i + 2}")
        if kind == "<" and p[i + 3:i + 4] not in ("=", "!"):
            self.scopes.append([])
            self._emit("(?P<", 3)
            return
        match = _FLAG_GROUP.match(p, i)
        if match is None:   # (?: (?= (?! (?<= (?<! (?>
            self.scopes.append([])
            self._emit(p[i:i + 2])
            return
        on, off, end = match.group(1), match.group(2) or "", match.group(3)
        if not set(on + off) <= _JAVA_FLAGS:
            raise InvalidPattern(f"Unknown inline modifier near index {i + 2}")
        if set(on) & set("uU"):
            self.unicode = True
        on, off = (_python_flags(f) for f in (on, off))
        opening = f"(?{on}{'-' + off if off else ''}:" if on or off else "(?:"
        self.i = match.end()
        if end == ":":
            self.scopes.append([])
            self.out.append(opening)
        elif on or off:
            # Java: from here to the end of the enclosing group.
            self.scopes[-1].append(opening)
            self.out.append(opening)


def _python_flags(flags: str) -> str:
    """Java's inline flags as ``re`` has them: d (UNIX_LINES), u and U (Unicode,
    applied to the whole pattern) have no scoped form here."""
    return "".join(f for f in flags if f in "imsx")
