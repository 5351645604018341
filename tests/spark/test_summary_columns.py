"""The report's aggregates column by column (spark_jobs/summary_arrow.py) are
the readable loops' (spark_jobs/summary_rows.py), value for value and in the
same order: shares of generated pairs and requests with null keys, null
latencies and timestamps, latencies at and beside powers of ten (where an ulp
of log10 decides the bucket) and below 1 ns, the columns given as lists,
numpy arrays or Arrow arrays; and sums of several shares, as the driver adds
up its tasks'.  No Spark: the byte-for-byte reports of every path are
test_summary_arrow.py's.  The column-wise functions are tested whatever
KAFKA_NET_READABLE says (it only chooses which of the two the job uses).
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_net.spark_jobs import summary_arrow, summary_rows

# Few distinct values, so that keys repeat and groups have many members.
API_KEYS = st.one_of(st.none(), st.sampled_from([0, 1, 3, 18, 2**31 - 1, -1]))
NAMES = st.one_of(st.none(), st.sampled_from(["Produce", "Fetch", "Metadata", ""]))
VERSIONS = st.one_of(st.none(), st.integers(0, 3))
CLIENTS = st.one_of(st.none(), st.sampled_from(["", "producer-1", "consumer é"]))
DECADES = st.integers(0, 18).map(lambda k: 10**k)
NEAR_DECADE = st.tuples(DECADES, st.integers(-3, 3)).map(lambda t: t[0] + t[1])
NANOS = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), NEAR_DECADE,
                  st.sampled_from([0, 1, 2, 999_999_999_999_999, 10**15 - 2,
                                   9_999_999_999_999_999, 2**53 + 1]))
STAMPS = st.one_of(st.none(), st.integers(-2**62, 2**62),
                   st.integers(-3, 3).map(lambda s: s * 10**9 + 1_700_000_000 * 10**9),
                   st.integers(0, 10**10))


def rows_of(fields: dict, size):
    return st.lists(st.fixed_dictionaries(fields), max_size=size)


PAIRS = rows_of({"api_key": API_KEYS, "api_name": NAMES, "api_version": VERSIONS,
                 "client_id": CLIENTS, "latency_ns": NANOS, "errors": st.booleans()}, 60)
REQUESTS = rows_of({"api_key": API_KEYS, "api_name": NAMES, "api_version": VERSIONS,
                    "client_id": CLIENTS, "timestamp_ns": STAMPS,
                    "responses": st.one_of(st.none(), st.integers(0, 3))}, 60)


def columns(rows: list[dict], names: tuple[str, ...]) -> dict[str, list]:
    return {n: [r[n] for r in rows] for n in names}


def as_given(cols: dict[str, list], how: str) -> dict:
    """The columns as a caller hands them: lists, numpy arrays where a field
    has no null (check_columns' columns), or Arrow arrays (summarise's)."""
    if how == "lists":
        return cols
    out = {}
    for name, values in cols.items():
        kind = summary_arrow._TYPES.get(name, "int64")
        if how == "arrow":
            out[name] = pa.chunked_array([pa.array(values, type=pa.type_for_alias(kind))])
        elif None not in values and kind != "string":
            out[name] = np.array(values, dtype=bool if kind == "bool" else np.int64)
        else:
            out[name] = values
    return out


def columnwise():
    """The column-wise functions, whatever the flag and however few the rows."""
    return mock.patch.multiple(summary_arrow, COLUMNWISE=True, COLUMNWISE_FROM=0)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=PAIRS, requests=REQUESTS, how=st.sampled_from(["lists", "numpy", "arrow"]))
@example(pairs=[], requests=[], how="arrow")
def test_a_share_is_the_readable_loops_share(pairs, requests, how):
    p = columns(pairs, summary_arrow.PAIR_FIELDS)
    r = columns(requests, summary_arrow.REQUEST_FIELDS)
    want = summary_rows.partials(p, r)
    with columnwise():
        assert summary_arrow.partials(as_given(p, how), as_given(r, how)) == want


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(shares=st.lists(st.tuples(PAIRS, REQUESTS), min_size=1, max_size=4))
def test_shares_add_up_to_the_readable_loops_sum(shares):
    """The latencies merged per API (percentiles, maximum, count), and the
    other aggregates, over shares made both ways: summarise's own (its
    latencies Arrow arrays) and partials' (lists, as Spark's rows carry them)."""
    with columnwise():
        check_sums(shares)


def check_sums(shares) -> None:
    made = [(columns(p, summary_arrow.PAIR_FIELDS), columns(r, summary_arrow.REQUEST_FIELDS))
            for p, r in shares]
    rows = [summary_rows.partials(p, r) for p, r in made]
    ours = [summary_arrow._share(as_given(p, "arrow"), as_given(r, "arrow")) if i % 2
            else summary_arrow.partials(p, r) for i, (p, r) in enumerate(made)]
    every = {name: [[row for share in s for row in share[name]] for s in (rows, ours)]
             for name in summary_arrow.SHARES}
    want_groups: dict[tuple, list] = {}
    for row in every["latencies"][0]:
        want_groups.setdefault((row["api_key"], row["api_name"]), []).extend(row["latency_ns"])
    got = summary_arrow._latency_rows(summary_arrow._groups(
        ((row["api_key"], row["api_name"]), row["latency_ns"]) for row in every["latencies"][1]))
    assert got == summary_rows.latency_rows(want_groups)
    for name, key in (("histogram", ("api_name", "bucket")), ("timeline", ("second",))):
        assert summary_arrow._summed(every[name][1], key) == \
            summary_arrow._summed(every[name][0], key)
    assert summary_arrow.merged_per_api(every["request_counts"][1], every["error_counts"][1]) \
        == summary_arrow.merged_per_api(every["request_counts"][0], every["error_counts"][0])


@given(st.one_of(st.integers(1, 2**63 - 1), NEAR_DECADE.filter(lambda n: n >= 1),
                 st.floats(1, 1e300)))
def test_floor_log10_is_maths_for_every_double_at_least_one(x):
    x = float(x)
    assert summary_arrow._floor_log10(np.array([x]))[0] == math.floor(math.log10(x))


def test_floor_log10_decides_beside_each_power_of_ten_as_maths_does():
    """Every double within 4 ulps of 10**k (k = 0..22), where numpy's log10 and
    the C library's could disagree by an ulp about the floor."""
    x = np.array([v for k in range(23) for v in _ulps_around(float(10**k), 4) if v >= 1])
    want = [math.floor(math.log10(v)) for v in x.tolist()]
    assert summary_arrow._floor_log10(x).tolist() == want


def _ulps_around(x: float, n: int) -> list[float]:
    out, below, above = [x], x, x
    for _ in range(n):
        below, above = math.nextafter(below, 0), math.nextafter(above, math.inf)
        out += [below, above]
    return out


def test_percentiles_of_a_numpy_array_are_those_of_a_list():
    values = [3, 1, 10**18, 7, 7, 2**62, 5]
    ordered = sorted(values)
    for fraction in summary_rows.PERCENTILES:
        assert summary_arrow.percentile(np.array(ordered), fraction) == \
            summary_rows.percentile(ordered, fraction)


def test_a_small_share_is_made_by_the_loops_and_is_the_same():
    """Below COLUMNWISE_FROM rows partials() runs the loops (cheaper there), on
    numpy and Arrow columns as on lists."""
    p = {"api_key": np.array([0, 0, 1]), "api_name": ["Produce", "Produce", "Fetch"],
         "api_version": np.array([9, 9, 12]), "client_id": ["a", "b", "a"],
         "latency_ns": pa.chunked_array([pa.array([5, None, 10**9], pa.int64())]),
         "errors": np.array([True, False, False])}
    r = {**{k: p[k] for k in ("api_key", "api_name", "api_version", "client_id")},
         "responses": np.array([1, 1, 1]), "timestamp_ns": np.array([0, 10**9, 2 * 10**9])}
    with mock.patch.object(summary_arrow, "_share", side_effect=AssertionError):
        got = summary_arrow.partials(p, r)
    with columnwise():
        assert summary_arrow.partials(p, r) == got
    assert got["latencies"][0]["latency_ns"] == [5, None]
