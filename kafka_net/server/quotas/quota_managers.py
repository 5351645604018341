"""QuotaManagers: the broker's client quota managers and their reaper thread
(Kafka's ``QuotaFactory.QuotaManagers``), plus the quota configuration that
AlterClientQuotas edits.

The hot path reads one attribute, :attr:`QuotaManagers.enabled`: False until
a client quota of any type is set, and then nothing is recorded at all.
"""

from __future__ import annotations

import time
from typing import Callable

from kafka_net.config import ServerConfig
from kafka_net.config.quota_keys import (
    CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE)
from kafka_net.server.quotas.client_quota_manager import (
    ClientQuotaManager, ClientRequestQuotaManager)
from kafka_net.server.quotas.client_quotas import ClientQuotas
from kafka_net.server.quotas.throttled_channel import ThrottledChannelReaper


class QuotaManagers:
    def __init__(self, config: ServerConfig, request_channel=None, ip_quotas=None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        samples, window_s = config.quota_window_num, config.quota_window_size_seconds
        self.request_channel = request_channel
        self.clock_ms = clock_ms or (lambda: time.monotonic_ns() // 1_000_000)
        clock_ns = time.monotonic_ns if clock_ms is None else lambda: clock_ms() * 1_000_000
        self.reaper = ThrottledChannelReaper(clock_ns,
                                             name=f"ThrottledChannelReaper-{config.node_id}")
        self.produce = ClientQuotaManager("Produce", samples, window_s, self.reaper,
                                          self.clock_ms)
        self.fetch = ClientQuotaManager("Fetch", samples, window_s, self.reaper, self.clock_ms)
        self.request = ClientRequestQuotaManager(samples, window_s, self.reaper, self.clock_ms)
        self.client_quotas = ClientQuotas(
            {PRODUCER_BYTE_RATE: self.produce, CONSUMER_BYTE_RATE: self.fetch,
             REQUEST_PERCENTAGE: self.request}, ip_quotas)
        self.client_quotas.on_change = self._refresh_enabled
        self.enabled = False
        self._started = False

    def _refresh_enabled(self) -> None:
        self.enabled = (self.produce.quotas_enabled or self.fetch.quotas_enabled
                        or self.request.quotas_enabled)

    @property
    def can_mute(self) -> bool:
        """Throttled channels can be muted: there are Processors to tell, and a
        reaper running to unmute them."""
        return self._started and self.request_channel is not None

    def startup(self) -> None:
        self.reaper.start()
        self._started = True

    def shutdown(self) -> None:
        """Stop the reaper; throttles still pending are ended (see the reaper)."""
        if self._started:
            self._started = False
            self.reaper.shutdown()

    def metrics(self) -> dict[str, float]:
        if not self.enabled:
            return {}
        out: dict[str, float] = {}
        for manager in (self.produce, self.fetch, self.request):
            out.update(manager.metrics())
        return out
