"""Spark schemas of the job's tables (frames, pairs, violations, requests)."""

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, IntegerType, LongType, MapType, StringType,
    StructField, StructType)

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
    StructField("marker", StringType()),          # None for frames; "gap", "close", "sync"
    StructField("gap_start", LongType()),         # lost stream bytes (gap markers, and
    StructField("gap_end", LongType()),           # frames with bytes lost inside)
    StructField("frame_number", IntegerType()),   # pcap: Wireshark's 1-based number of
    #                                               the packet completing it; else 0
    StructField("file_offset", LongType()),       # kncap: the record's byte offset; else -1
])

# Parquet's dictionary encoding, for the columns whose values repeat.  The writer
# tries a dictionary on each column it is asked to until the dictionary outgrows a
# page; on a column of nearly all distinct values (frame bytes, timestamps,
# offsets, order keys, correlation ids) that try is pure cost, and the plain
# pages come out as small or smaller.  For the 920k-frame capture of
# bench/RESULTS.md: the frame bytes 0.72 -> 0.58 CPU s, the other columns of
# frames.parquet 0.254 -> 0.237 s, pairs.parquet 0.094 -> 0.059 s (a file 4%
# larger).
_DISTINCT = {"frame", "order_key", "timestamp_ns", "correlation_id", "file_offset",
             "gap_start", "gap_end", "request_position", "request_ns", "response_ns",
             "latency_ns", "error_codes"}
FRAME_DICTIONARY_COLUMNS = [f.name for f in FRAME_SCHEMA.fields if f.name not in _DISTINCT]

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
PAIR_DICTIONARY_COLUMNS = [f.name for f in PAIR_SCHEMA.fields if f.name not in _DISTINCT]

# Where to find each violation (kafka_net/capture/findings.py builds the rows).
VIOLATION_SCHEMA = StructType([
    StructField("connection", StringType()),      # client and broker address:port
    StructField("check", StringType()),
    StructField("position", IntegerType()),       # frame index within the connection
    StructField("party", StringType()),           # client, broker, capture (attribution)
    StructField("severity", StringType()),        # violation, deviation, note
    StructField("client_software", StringType()), # "name version" from ApiVersions v3+
    StructField("known_deviation", StringType()), # the catalogue entry explaining it, or ""
    StructField("direction", StringType()),       # "request" or "response"
    StructField("file", StringType()),
    StructField("frame_number", IntegerType()),   # pcap: as Wireshark numbers it; else 0
    StructField("file_offset", LongType()),       # kncap: record offset; else -1
    StructField("timestamp_ns", LongType()),
    StructField("timestamp", StringType()),       # the same, UTC ISO 8601
    StructField("api_key", IntegerType()),        # -1: no request to tie it to
    StructField("api_name", StringType()),
    StructField("api_version", IntegerType()),
    StructField("client_id", StringType()),
    StructField("correlation_id", IntegerType()),
    StructField("correlation_ids", ArrayType(IntegerType())),   # every id involved
    StructField("request_position", IntegerType()),
    StructField("request_frame_number", IntegerType()),
    StructField("detail", StringType()),
    StructField("frame_size", IntegerType()),
    StructField("hex_head", StringType()),        # the first 64 bytes, size prefix included
    StructField("fault_offset", IntegerType()),   # in those bytes; -1: not known
    StructField("hex_fault", StringType()),       # 32 bytes around the fault
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

# Fields of each connection's summary row (transforms.check_connection's
# "connection") that feed the report's matrix and --compare; the summary's other
# fields are plain counts.  "cells" is a list of CELL_SCHEMA structs.
CELL_SCHEMA = StructType([
    StructField("api_key", IntegerType()),        # -1: violations tied to no request
    StructField("api_version", IntegerType()),
    StructField("client_id", StringType()),
    StructField("client_software", StringType()), # "name version" from ApiVersions v3+
    StructField("requests", IntegerType()),
    StructField("responses", IntegerType()),      # responses carrying a request's id
    StructField("pairs", IntegerType()),
    StructField("violations", IntegerType()),
    StructField("checked", IntegerType()),        # the cell's frames per coverage state
    StructField("header_only", IntegerType()),
    StructField("unverifiable", IntegerType()),
    StructField("error_codes", MapType(StringType(), IntegerType())),   # code -> pairs
])
VERSIONS_SERVED_TYPE = MapType(StringType(), ArrayType(IntegerType()))  # key -> [min, max]

STATE_SCHEMA = StructType([                       # each frame's coverage state
    StructField("connection", StringType()),
    StructField("position", IntegerType()),
    StructField("state", StringType()),           # pairing_checks.STATES
    StructField("reason", StringType()),          # header_only: why
    StructField("gap_start", LongType()),         # unverifiable: the gap's byte range
    StructField("gap_end", LongType()),
])
