"""bench/ssl_overhead.py runs end to end (tiny durations): both listeners answer
every request of both scenarios, the broker logs no warning, and the transport-only
mode measures both transport layers."""

from __future__ import annotations

from bench import ssl_overhead


def test_ssl_overhead_measures_both_listeners_without_problems(capsys):
    ssl_overhead.main(["--rounds", "1", "--duration", "0.3", "--warmup", "0.1",
                       "--connections", "2"])
    out = capsys.readouterr().out
    for scenario in ssl_overhead.SCENARIOS:
        for listener in ("PLAINTEXT", "SSL"):
            assert f"| {scenario} | {listener} |" in out
    assert "problem:" not in out


def test_ssl_overhead_transport_only_measures_both_transports(capsys):
    ssl_overhead.main(["--transport-only", "--rounds", "1"])
    out = capsys.readouterr().out
    assert "| PlaintextTransportLayer |" in out and "| SslTransportLayer |" in out
