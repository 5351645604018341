"""Tests of the PySpark conformance job (spark_jobs/)."""
