"""kafka-net's benchmarks: ``python -m bench`` (``make bench``) starts the servers each
group compares, measures them interleaved and rewrites the group's section of
``bench/RESULTS.md``.  See ``bench/README.md``."""
