"""Kafka's sampled statistics (``SampledStat``, ``Rate`` over a ``WindowedSum``,
``Avg``) and ``QuotaUtils.throttleTime``: one implementation for connection
quotas (network) and client quotas (server).

The arithmetic is Kafka's, so a quota trips at the same connection or request
as it would on a Kafka broker:

* values are summed into ``samples`` samples of ``window_ms`` each (kept as a
  ring of ``samples + 1``: Kafka's spare "overlapping" sample, one that began
  before the monitored window but reaches into it); a sample with no event for
  ``samples * window_ms`` is reset;
* the rate is the sum over the elapsed time since the oldest sample, counted
  as at least ``samples - 1`` whole windows, so a fresh sensor does not
  report a huge rate after its first event (a client's first burst is spread
  over ten seconds with Kafka's defaults, not over a few milliseconds);
* a record that makes the rate exceed the bound is still recorded; the
  caller gets the delay that brings the rate back to the bound,
  ``(rate - bound) / bound * window_size``, capped by the caller's maximum.

:class:`Avg` is Kafka's ``metrics.stats.Avg`` over the same kind of samples
(the throttle-time metrics), NaN until something is recorded.

Times are integer milliseconds from whatever clock the owner uses; nothing
here reads a clock, so tests drive it with plain numbers.
"""

from __future__ import annotations

import math


class Sample:
    __slots__ = ("value", "event_count", "start_ms", "last_event_ms")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class SampledStat:
    """Kafka's SampledStat: values summed into a ring of time-window samples."""

    __slots__ = ("num_samples", "window_ms", "_samples", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.num_samples = samples
        self.window_ms = window_ms
        self._samples: list[Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def last_record_ms(self) -> int | None:
        if not self._samples:
            return None
        return max(s.last_event_ms for s in self._samples)

    def total(self, now_ms: int) -> float:
        """The sum of the retained samples (Kafka's WindowedSum)."""
        self._purge_obsolete(now_ms)
        return sum(s.value for s in self._samples)

    # -- the sample ring ------------------------------------------------------------------

    def _current_sample(self, now_ms: int) -> Sample:
        if not self._samples:
            self._samples.append(Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> Sample:
        self._current = (self._current + 1) % (self.num_samples + 1)
        if self._current >= len(self._samples):
            sample = Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> Sample:
        if not self._samples:
            self._samples.append(Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)


class Avg(SampledStat):
    """The mean of the values recorded in the window; NaN if there are none."""

    __slots__ = ()

    def measure(self, now_ms: int) -> float:
        self._purge_obsolete(now_ms)
        count = sum(s.event_count for s in self._samples)
        return sum(s.value for s in self._samples) / count if count else math.nan


class Rate(SampledStat):
    """Per second over ``samples`` windows of ``window_ms``.

    ``bound`` is for owners that keep the bound with the rate (connection
    quotas, :meth:`record_and_get_throttle_time_ms`); client quotas keep it in
    their sensor, since a quota change rebinds it, and use :meth:`record`.
    """

    __slots__ = ("bound",)

    def __init__(self, samples: int, window_ms: int, bound: float = math.inf) -> None:
        super().__init__(samples, window_ms)
        self.bound = float(bound)

    def record_and_get_throttle_time_ms(self, now_ms: int, max_throttle_ms: int) -> int:
        """Record one event; the delay (ms, at most ``max_throttle_ms``) that brings
        the rate back within the bound, 0 if it is within (Kafka's
        recordAndGetThrottleTimeMs with QuotaUtils.boundedThrottleTime)."""
        self.record(1.0, now_ms)
        value = self.measure(now_ms)
        if value <= self.bound:
            return 0
        if self.bound <= 0:
            return max_throttle_ms   # Java divides by zero into Infinity, then caps it
        return bounded_throttle_time_ms(value, self.bound, self.window_size_ms(now_ms),
                                        max_throttle_ms)

    def unrecord(self, now_ms: int) -> None:
        """Take one event back (Kafka records -1 without a quota check)."""
        self.record(-1.0, now_ms)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        return self.total(now_ms) / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        """Elapsed time since the oldest retained sample, at least ``samples - 1``
        whole windows (and at least 1 ms): Kafka's Rate.windowSize."""
        self._purge_obsolete(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed // self.window_ms
        min_full_windows = self.num_samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return max(elapsed, 1)


def throttle_time_ms(value: float, bound: float, window_ms: int) -> int:
    """``QuotaUtils.throttleTime``: the delay X that brings an observed rate O back
    to the quota T over a window W, from O * W / (W + X) = T: X = (O - T) / T * W.
    Rounded half up, as Java's ``Math.round``."""
    return math.floor((value - bound) / bound * window_ms + 0.5)


def bounded_throttle_time_ms(value: float, bound: float, window_ms: int,
                             max_throttle_ms: int) -> int:
    """``QuotaUtils.boundedThrottleTime``: the same, capped (request quotas and
    connection rates cap it at one quota window)."""
    return min(throttle_time_ms(value, bound, window_ms), max_throttle_ms)
