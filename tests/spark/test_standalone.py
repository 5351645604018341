"""The conformance job on a Spark standalone cluster: a master and two workers
on loopback (their own JVMs, started and stopped here), the job submitted to it
as a user would (``--master spark://...``, the CLI in its own process), with
executors in JVMs of their own that get the job's code as a zip.

Checked: the report's exact totals (kafka-net captures and a pcap cut into
ranges, together), and that no executor was lost: each worker launched one
executor (a lost one is replaced, leaving another folder), and no worker or
executor log says an executor failed or ran out of memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.spark_bench import generate, generate_pcap
from kafka_net.spark_jobs.standalone import LoopbackCluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cluster(tmp_path):
    with LoopbackCluster(str(tmp_path / "cluster"), workers=2, cores=1, memory="3g",
                         timeout_s=120) as c:
        yield c


def test_two_workers_run_the_job_with_no_executor_lost(cluster, tmp_path):
    kncap = generate(str(tmp_path / "kncap"), 6_000, 40, processors=2, segment_bytes=256 << 10)
    pcap = generate_pcap(str(tmp_path / "pcap"), 12_000, 20, 1 << 30)
    assert pcap["bytes"] > 2 << 20
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [sys.executable, "-m", "kafka_net.spark_jobs.conformance",
            *kncap["paths"], *pcap["paths"], "--out", str(out), "--master", cluster.url,
            "--split-mb", "1", "--in-process-below-mb", "0"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=400, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(out / "report.json", encoding="utf-8") as fh:
        totals = json.load(fh)["totals"]
    assert (totals["frames"], totals["pairs"], totals["connections"], totals["violations"]) \
        == (kncap["frames"] + pcap["frames"], kncap["pairs"] + pcap["pairs"],
            kncap["connections"] + pcap["connections"], 0)
    with open(out / "problems.json", encoding="utf-8") as fh:
        assert len(json.load(fh)["ranges"]) >= 2     # the pcap was cut into ranges
    executors = cluster.executor_dirs()
    assert [os.path.basename(os.path.dirname(os.path.dirname(d))) for d in executors] \
        == ["worker0", "worker1"], executors
    assert cluster.executor_failures() == []
