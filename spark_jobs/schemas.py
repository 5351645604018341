"""Spark schemas of the job's tables (frames, pairs, violations, requests)."""

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, IntegerType, LongType, StringType, StructField,
    StructType)

FRAME_SCHEMA = StructType([
    StructField("source", StringType()),          # "kafka-net" or "pcap"
    StructField("file", StringType()),
    StructField("connection", StringType()),
    StructField("order_key", ArrayType(LongType())),
    StructField("direction", IntegerType()),      # 0 request, 1 response
    StructField("timestamp_ns", LongType()),
    StructField("frame_size", IntegerType()),
    StructField("truncated", BooleanType()),
    StructField("after_gap", BooleanType()),
    StructField("api_key", IntegerType()),        # requests only
    StructField("api_version", IntegerType()),    # requests only
    StructField("correlation_id", IntegerType()),
    StructField("client_id", StringType()),
    StructField("frame", BinaryType()),
    StructField("marker", StringType()),          # None for frames; "gap", "close"
    StructField("gap_start", LongType()),         # lost stream bytes (gap markers, and
    StructField("gap_end", LongType()),           # frames with bytes lost inside)
])

PAIR_SCHEMA = StructType([
    StructField("connection", StringType()),
    StructField("correlation_id", IntegerType()),
    StructField("api_key", IntegerType()),
    StructField("api_name", StringType()),
    StructField("api_version", IntegerType()),
    StructField("client_id", StringType()),
    StructField("request_position", IntegerType()),
    StructField("request_ns", LongType()),
    StructField("response_ns", LongType()),
    StructField("latency_ns", LongType()),
    StructField("error_codes", ArrayType(IntegerType())),
])

VIOLATION_SCHEMA = StructType([
    StructField("connection", StringType()),
    StructField("check", StringType()),
    StructField("position", IntegerType()),
    StructField("timestamp_ns", LongType()),
    StructField("correlation_id", IntegerType()),
    StructField("detail", StringType()),
])

REQUEST_SCHEMA = StructType([
    StructField("connection", StringType()),
    StructField("api_key", IntegerType()),
    StructField("api_name", StringType()),
    StructField("api_version", IntegerType()),
    StructField("client_id", StringType()),
    StructField("timestamp_ns", LongType()),
    StructField("acks0", BooleanType()),
    StructField("responses", IntegerType()),      # responses carrying its id
])

STATE_SCHEMA = StructType([                       # each frame's coverage state
    StructField("connection", StringType()),
    StructField("position", IntegerType()),
    StructField("state", StringType()),           # pairing_checks.STATES
    StructField("reason", StringType()),          # header_only: why
    StructField("gap_start", LongType()),         # unverifiable: the gap's byte range
    StructField("gap_end", LongType()),
])
