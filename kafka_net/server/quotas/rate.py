"""Kafka's sampled statistics, the part client quotas need (``SampledStat``,
``WindowedSum``, ``Rate``, ``Avg``) and ``QuotaUtils.throttleTime``.

A quota sensor keeps ``quota.window.num`` samples of
``quota.window.size.seconds`` each; a value is added to the current sample,
which is replaced once it is older than one window.  The measured rate is the
sum of the retained samples divided by the elapsed time since the oldest one,
where the elapsed time is never taken as less than ``samples - 1`` whole
windows: a client's first burst is spread over ten seconds (with Kafka's
defaults), not over the few milliseconds since the sensor was created.

Times are in milliseconds, given by the caller, so tests can use their own clock.
"""

from __future__ import annotations

import math


class Sample:
    __slots__ = ("event_count", "start_ms", "last_event_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class SampledStat:
    """``samples`` windows of ``window_ms``, plus Kafka's one spare "overlapping"
    sample (a sample that began before the monitored window but reaches into it)."""

    __slots__ = ("samples", "window_ms", "_samples", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
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

    def _current_sample(self, now_ms: int) -> Sample:
        if not self._samples:
            self._samples.append(Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def purge_obsolete_samples(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def oldest(self, now_ms: int) -> Sample:
        if not self._samples:
            self._samples.append(Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def total(self, now_ms: int) -> float:
        self.purge_obsolete_samples(now_ms)
        return sum(s.value for s in self._samples)

    def average(self, now_ms: int) -> float:
        """Kafka's ``Avg``: sum of values over number of events (NaN when none)."""
        self.purge_obsolete_samples(now_ms)
        count = sum(s.event_count for s in self._samples)
        return sum(s.value for s in self._samples) / count if count else math.nan


class Rate:
    """Kafka's ``Rate`` over a ``WindowedSum``, per second."""

    __slots__ = ("stat",)

    def __init__(self, samples: int, window_ms: int) -> None:
        self.stat = SampledStat(samples, window_ms)

    def record(self, value: float, now_ms: int) -> None:
        self.stat.record(value, now_ms)

    def measure(self, now_ms: int) -> float:
        total = self.stat.total(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        """Elapsed time since the oldest retained sample, at least ``samples - 1``
        whole windows (and at least 1 ms)."""
        stat = self.stat
        stat.purge_obsolete_samples(now_ms)
        elapsed = now_ms - stat.oldest(now_ms).start_ms
        full_windows = elapsed // stat.window_ms
        min_full_windows = stat.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * stat.window_ms
        return max(elapsed, 1)


def throttle_time_ms(value: float, bound: float, window_ms: int) -> int:
    """``QuotaUtils.throttleTime``: the delay X that brings an observed rate O back
    to the quota T over a window W, from O * W / (W + X) = T: X = (O - T) / T * W.
    Rounded half up, as Java's ``Math.round``."""
    return math.floor((value - bound) / bound * window_ms + 0.5)


def bounded_throttle_time_ms(value: float, bound: float, window_ms: int,
                             max_throttle_ms: int) -> int:
    """``QuotaUtils.boundedThrottleTime``: the same, capped (request quotas cap it
    at one quota window)."""
    return min(throttle_time_ms(value, bound, window_ms), max_throttle_ms)
