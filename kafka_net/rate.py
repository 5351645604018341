"""Rate and Avg: Kafka's windowed metrics, as its connection-rate sensors use them.

The arithmetic is Kafka's (``metrics.stats.Rate`` over a ``WindowedSum``,
``Sensor.checkQuotas``, ``QuotaUtils.throttleTime``), so a quota trips at the
same connection as it would on a Kafka broker:

* values are summed into ``samples`` samples of ``window_ms`` each (kept as a
  ring of ``samples + 1`` so a sample overlapping the window survives);
  a sample with no event for ``samples * window_ms`` is reset;
* the rate is the sum over the elapsed time since the oldest sample, counted
  as at least ``samples - 1`` whole windows, so a fresh sensor does not
  report a huge rate after its first event;
* a record that makes the rate exceed the bound is still recorded; the
  caller gets the delay that brings the rate back to the bound,
  ``(rate - bound) / bound * window_size``, capped by the caller's maximum.

:class:`Avg` is Kafka's ``metrics.stats.Avg`` over the same kind of samples
(the connection-accept throttle-time metrics), NaN until something is recorded.

Times are integer milliseconds from whatever clock the owner uses; nothing
here reads a clock, so tests drive it with plain numbers.
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("value", "event_count", "start_ms", "last_event_ms")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class _SampledStat:
    """Kafka's SampledStat: values summed into a ring of time-window samples."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.num_samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
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

    # -- the sample ring ------------------------------------------------------------------

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.num_samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)


class Avg(_SampledStat):
    """The mean of the values recorded in the window; NaN if there are none."""

    def measure(self, now_ms: int) -> float:
        self._purge_obsolete(now_ms)
        count = sum(s.event_count for s in self._samples)
        return sum(s.value for s in self._samples) / count if count else math.nan


class Rate(_SampledStat):
    """Events per second over ``samples`` windows of ``window_ms``, with an upper bound."""

    def __init__(self, samples: int, window_ms: int, bound: float) -> None:
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
        throttle = (value - self.bound) / self.bound * self.window_size(now_ms)
        return min(math.floor(throttle + 0.5), max_throttle_ms)   # Java's Math.round

    def unrecord(self, now_ms: int) -> None:
        """Take one event back (Kafka records -1 without a quota check)."""
        self.record(-1.0, now_ms)

    def measure(self, now_ms: int) -> float:
        """Events per second."""
        self._purge_obsolete(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size(now_ms) / 1000.0)

    def window_size(self, now_ms: int) -> int:
        self._purge_obsolete(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed // self.window_ms
        min_full_windows = self.num_samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return max(elapsed, 1)
