"""PySpark jobs that validate Kafka wire captures (see conformance.py)."""
