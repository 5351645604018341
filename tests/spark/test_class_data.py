"""The driver JVM's class-data archive (spark_jobs/class_data.py).

The first session writes it when its process ends, the next maps it, a damaged
one is removed and the job runs without it; one writer at a time.  The JVM runs
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


def session(tmp_path, folder) -> tuple[list[str], str]:
    env = {**os.environ, "KAFKA_NET_SPARK_CDS_DIR": str(folder), "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", SESSION], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    mapped = next(line.split()[1:] for line in done.stdout.splitlines()
                  if line.startswith("MAPPED"))
    return mapped, done.stderr


def test_the_first_session_writes_the_archive_and_the_next_maps_it(tmp_path):
    folder = tmp_path / "cds"
    mapped, _ = session(tmp_path, folder)
    archives = sorted(os.listdir(folder))
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives  # no .tmp, no .lock
    archive = str(folder / archives[0])
    assert archive not in mapped
    assert os.path.getsize(archive) > 10 << 20

    mapped, _ = session(tmp_path, folder)
    assert archive in mapped

    # Damaged (cut short, as a full disk would leave it): the JVM dies mapping
    # it; the session starts again without it, and the file goes.
    with open(archive, "r+b") as fh:
        fh.truncate(100_000)
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
    assert class_data.plan().writing is not None
