"""The driver JVM's class-data archive (spark_jobs/class_data.py).

The first session writes it when its process ends, the next maps it (and so do
the executors of a cluster on loopback), a damaged one is removed and the job
runs without it; one writer at a time.  The JVM runs
are real (a subprocess each: a JVM starts once per process); the lock and the
finishing step are also checked with a stand-in for the JVM, a process that
writes its file when its standard input closes, as Spark's gateway exits.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafka_net.spark_jobs import class_data

pytestmark = pytest.mark.spark

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A small job, and which .jsa files its JVM maps.
SESSION = """
from kafka_net.spark_jobs.session import get_spark
spark = get_spark("local[1]")
assert spark.range(100).selectExpr("sum(id)").collect()[0][0] == 4950
pid = spark.sparkContext._gateway.proc.pid
with open(f"/proc/{pid}/maps") as fh:
    print("MAPPED", *sorted({l.split()[-1] for l in fh if l.rstrip().endswith(".jsa")}))
spark.stop()
"""

# The same on a standalone cluster on loopback: what its executor's JVM maps (a
# Python worker's parent is Spark's Python daemon, whose parent is the executor).
ON_A_CLUSTER = """
import os, tempfile
from kafka_net.spark_jobs.session import get_spark, stop_spark
from kafka_net.spark_jobs.standalone import LoopbackCluster

def maps(_):
    import os
    with open(f"/proc/{os.getppid()}/stat") as fh:
        executor = int(fh.read().split()[3])
    with open(f"/proc/{executor}/maps") as fh:
        yield sorted({l.split()[-1] for l in fh if l.rstrip().endswith(".jsa")})

with LoopbackCluster(tempfile.mkdtemp(), workers=1, cores=1, memory="3g") as cluster:
    spark = get_spark(cluster.url)
    print("MAPPED", *spark.sparkContext.parallelize([0], 1).mapPartitions(maps).collect()[0])
    stop_spark(spark)
"""


def session(tmp_path, folder, program: str = SESSION) -> tuple[list[str], str]:
    env = {**os.environ, "KAFKA_NET_SPARK_CDS_DIR": str(folder), "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    mapped = next(line.split()[1:] for line in done.stdout.splitlines()
                  if line.startswith("MAPPED"))
    return mapped, done.stderr


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> str:
    """The archive the first session wrote (asserted: alone in its folder, no
    temporary file or lock left, and not mapped by the JVM that wrote it)."""
    work = tmp_path_factory.mktemp("first")
    mapped, _ = session(work, work / "cds")
    archives = sorted(os.listdir(work / "cds"))
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives
    archive = str(work / "cds" / archives[0])
    assert archive not in mapped
    assert os.path.getsize(archive) > 10 << 20
    return archive


# The writing session stopped with stop_spark, then another in the same process.
STOPPED_THEN_AGAIN = """
from kafka_net.spark_jobs.session import get_spark, stop_spark
spark = get_spark("local[1]")
stop_spark(spark)
spark = get_spark("local[1]")
assert spark.range(100).selectExpr("sum(id)").collect()[0][0] == 4950
pid = spark.sparkContext._gateway.proc.pid
with open(f"/proc/{pid}/maps") as fh:
    print("MAPPED", *sorted({l.split()[-1] for l in fh if l.rstrip().endswith(".jsa")}))
stop_spark(spark)
"""


def test_stop_spark_puts_the_archive_in_place_and_a_new_session_maps_it(tmp_path):
    """stop_spark ends the JVM that writes the archive: the next session of the
    same process starts a JVM of its own, which maps the archive just written."""
    mapped, _ = session(tmp_path, tmp_path / "cds", STOPPED_THEN_AGAIN)
    archives = os.listdir(tmp_path / "cds")
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives
    assert str(tmp_path / "cds" / archives[0]) in mapped


def test_the_next_session_maps_the_archive_the_first_wrote(written, tmp_path):
    mapped, _ = session(tmp_path, os.path.dirname(written))
    assert written in mapped


def test_the_executors_of_a_loopback_cluster_map_it_too(written, tmp_path):
    mapped, _ = session(tmp_path, os.path.dirname(written), ON_A_CLUSTER)
    assert written in mapped


def test_a_damaged_archive_goes_and_the_session_starts_without_it(written, tmp_path):
    # Cut short, as a full disk would leave it: the JVM dies mapping it.
    folder = tmp_path / "cds"
    folder.mkdir()
    archive = str(folder / os.path.basename(written))
    with open(written, "rb") as src, open(archive, "wb") as dst:
        dst.write(src.read(100_000))
    mapped, stderr = session(tmp_path, folder)
    assert archive not in mapped
    assert "could not use its class-data archive" in stderr
    assert not os.path.exists(archive)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("hs_err")]


def test_off_reads_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_NET_SPARK_CDS", "0")
    monkeypatch.setenv("KAFKA_NET_SPARK_CDS_DIR", str(tmp_path))
    assert class_data.plan() == class_data.Plan("", None)
    assert os.listdir(tmp_path) == []


def stand_in_jvm(writes: str, exit_code: int = 0) -> subprocess.Popen:
    code = (f"import sys; sys.stdin.read(); open({writes!r}, 'wb').write(b'x' * 4096); "
            f"sys.exit({exit_code})")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)


def test_one_writer_and_a_whole_archive_or_none(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_NET_SPARK_CDS_DIR", str(tmp_path))
    first = class_data.plan()
    assert first.writing and "-XX:ArchiveClassesAtExit=" + first.writing in first.options
    # While it writes, another session goes without.
    assert class_data.plan() == class_data.Plan("", first.archive)

    class_data.finish(first, stand_in_jvm(first.writing, exit_code=1))
    assert os.listdir(tmp_path) == []          # an unclean exit leaves nothing

    second = class_data.plan()
    class_data.finish(second, stand_in_jvm(second.writing))
    assert os.listdir(tmp_path) == [os.path.basename(second.archive)]
    assert "-XX:SharedArchiveFile=" + second.archive in class_data.plan().options


def test_a_lock_whose_writer_is_gone_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_NET_SPARK_CDS_DIR", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    archive = os.path.join(tmp_path, class_data.key() + class_data.ARCHIVE_SUFFIX)
    with open(archive + ".lock", "w") as fh:
        fh.write(gone + "\n")
    left = f"{archive}.{gone}.tmp"           # what its JVM wrote after it was gone
    with open(left, "wb") as fh:
        fh.write(b"x" * 4096)
    taken = class_data.plan()
    assert taken.writing is not None
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(archive) + ".lock"]
