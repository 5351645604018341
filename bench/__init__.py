"""Benchmarks for kafka-net: a load generator, a single-threaded reference server
and the driver that runs both against kafka-net and writes ``bench/RESULTS.md``.

``python -m bench.run_all`` is the one command (``make bench`` runs it).
"""
