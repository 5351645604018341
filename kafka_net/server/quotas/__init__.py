"""Client quotas and throttling (KIP-13, KIP-124, KIP-219, KIP-546).

Kafka's sampled rate and throttle-time formula are :mod:`kafka_net.rate`,
shared with connection quotas.

* :mod:`.client_quota_manager`: per-client sensors, quota precedence;
* :mod:`.throttled_channel`: ThrottledChannel and the reaper thread;
* :mod:`.client_quotas`: the quota configuration (Alter/DescribeClientQuotas);
* :mod:`.quota_managers`: the broker's set of managers;
* :mod:`.request_helper`: recording a response's usage and throttling.
"""
