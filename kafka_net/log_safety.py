"""Logging that no client can abuse: escaped client strings and rate-limited lines.

Two ways a client could use a broker's log against it:

* **Forged lines.**  A client id (or topic name, group id, software name) is
  the client's text.  Logged as it is, ``"x\\n2026-01-01 ERROR fake"`` writes a
  line the operator did not get from the broker.  :func:`escape` turns every
  control character (and backslash) into a visible escape, so one log record
  is always one line and shows what the client really sent.
* **Floods.**  A line per rejected connection, per failed allocation or per
  bad frame lets a client that connects in a loop write as fast as it can
  connect.  :class:`RateLimitedLog` lets through the first line of a kind,
  then at most one per interval, and says how many it held back.

Both are pure functions of their input and a clock, so they are tested
without sockets.
"""

from __future__ import annotations

import logging
import threading
import time

# Below DEBUG, as log4j's TRACE: kafka.request.logger logs request and response
# bodies there (`--log-level TRACE`).
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: object, limit: int = 256) -> str:
    """``text`` safe for one log line: control characters escaped, cut at ``limit``.

    ``None`` stays visible as ``None`` (a null client id is not an empty one).
    """
    if text is None:
        return "None"
    s = str(text)
    cut = len(s) > limit
    if cut:
        s = s[:limit]
    if s.isprintable() and "\\" not in s:
        return s + ("..." if cut else "")
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif not ch.isprintable():
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out) + ("..." if cut else "")


class RateLimitedLog:
    """At most one record per ``interval_s`` for each ``kind``, counting the rest.

    ``kind`` is whatever makes two lines "the same" for the reader (for
    example ``("rejected", ip)``); the number of kinds remembered is bounded,
    so a client cycling through kinds cannot grow memory either.
    """

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0,
                 max_kinds: int = 1024, clock=time.monotonic) -> None:
        self._log = logger
        self._interval = interval_s
        self._max_kinds = max_kinds
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[object, float] = {}
        self._suppressed: dict[object, int] = {}

    def log(self, level: int, kind: object, msg: str, *args, exc_info: bool = False) -> bool:
        """Log unless a record of ``kind`` went out less than an interval ago
        (``exc_info``: with the traceback of the exception being handled).

        Returns True if this record was written.
        """
        now = self._clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self._interval:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return False
            if last is None and len(self._last) >= self._max_kinds:
                self._forget_oldest()
            self._last[kind] = now
            held = self._suppressed.pop(kind, 0)
        if held:
            msg += " (%d similar message(s) suppressed since the last one)"
            args = (*args, held)
        self._log.log(level, msg, *args, exc_info=exc_info or None)   # None: no traceback field
        return True

    def _forget_oldest(self) -> None:
        oldest = min(self._last, key=self._last.__getitem__)
        del self._last[oldest]
        self._suppressed.pop(oldest, None)
