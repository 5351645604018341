"""What the conformance job needs around it (issue 12's operational points).

* Missing Java or PySpark: ``kafka-net conformance`` names what is missing and
  how to get it, and exits with the usage code (2), never a traceback.  Java
  is taken away through PATH and JAVA_HOME; PySpark by blocking its import in
  the child process (``sys.modules["pyspark"] = None``), as a machine without
  it would fail the lookup.
* ``spark-submit spark_jobs/conformance.py`` from a plain shell (no
  virtualenv on PATH), with the command README's conformance section gives.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys

import pytest

from kafka_net.spark_jobs import session
from tests.compiled import compiled_modules
from tests.spark.conftest import (
    REQUEST, RESPONSE, kncap_file, kncap_record, request_payload, response_payload)

pytestmark = pytest.mark.spark

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
USAGE = 2


def small_capture(directory) -> str:
    """One connection, three ApiVersions v0 pairs."""
    os.makedirs(directory, exist_ok=True)
    records = []
    for corr in range(3):
        conn = "127.0.0.1:9092-127.0.0.1:40000-0-0"
        records.append(kncap_record(REQUEST, request_payload(18, 0, corr), conn, 10 * corr + 1))
        records.append(kncap_record(RESPONSE, response_payload(18, 0, corr, {
            "error_code": 0, "api_keys": []}), conn, 10 * corr + 2))
    return kncap_file(os.path.join(directory, "kafka-net-7-p0-000000.kncap"), records)


def conformance(tmp_path, env: dict, prelude: str = "") -> subprocess.CompletedProcess:
    capture = small_capture(tmp_path / "caps")
    code = (f"import sys\n{prelude}\nfrom kafka_net.cli import main\n"
            f"sys.exit(main(['conformance', {capture!r}, '--out', {str(tmp_path / 'out')!r}]))")
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def assert_usage_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == USAGE, done.stderr[-3000:]
    assert "Traceback (most recent call last)" not in done.stderr, done.stderr[-3000:]
    for word in words:
        assert word in done.stderr, done.stderr


def test_no_java_on_path_nor_java_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(PATH=str(tmp_path / "empty-bin"), PYTHONPATH=REPO)
    done = conformance(tmp_path, env)
    assert_usage_error(done, "Java runtime", "no `java` on PATH", "make java-check",
                       "apt-get install default-jre-headless")


def test_java_home_without_java(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "empty-bin"), PYTHONPATH=REPO,
               JAVA_HOME=str(tmp_path / "not-a-jre"))
    done = conformance(tmp_path, env)
    assert_usage_error(done, f"JAVA_HOME={tmp_path / 'not-a-jre'} has no bin/java",
                       "apt-get install default-jre-headless")


def test_no_pyspark(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = conformance(tmp_path, env, prelude="sys.modules['pyspark'] = None")
    assert_usage_error(done, "PySpark not installed", "pip install 'kafka-net[spark]'",
                       "make install")


def test_no_pyarrow(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = conformance(tmp_path, env, prelude="sys.modules['pyarrow'] = None")
    assert_usage_error(done, "pyarrow not installed", "pip install 'kafka-net[spark]'")


def test_spark_submit_from_a_plain_shell(tmp_path):
    """README's command, in an environment with nothing of the virtualenv in it:
    PATH has only the system's directories, no PYTHONPATH, no VIRTUAL_ENV."""
    capture = small_capture(tmp_path / "caps")
    out = tmp_path / "out"
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin",
           "PYSPARK_PYTHON": os.path.join(VENV_BIN, "python")}
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    done = subprocess.run(
        [os.path.join(VENV_BIN, "spark-submit"), "--master", "local[1]",
         "spark_jobs/conformance.py", capture, "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "report.json", encoding="utf-8") as fh:
        report = json.load(fh)
    assert report["verdict"] == "PASS"
    assert report["totals"]["pairs"] == 3
    assert report["unreadable"] == []


_PROBE = """
import importlib, json, sys
from kafka_net.spark_jobs.session import get_spark, ship_code
names = json.loads(sys.argv[1])
spark = get_spark("local[1]")
ship_code(spark)

def where(batches):
    import importlib as imports
    import pyarrow as pa
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist(
        [{"module": n, "file": imports.import_module(n).__file__} for n in names])

rows = spark.range(1, numPartitions=1).mapInArrow(where, "module string, file string").collect()
print(json.dumps({r.module: r.file for r in rows}))
spark.stop()
"""


def test_executors_import_the_shipped_package_compiled_modules_included(tmp_path):
    """ship_code sends kafka_net, with the compiled fast paths built for this
    interpreter, as an archive each executor unpacks into a folder: its Python
    workers import every module from it (a zip on the path cannot hold
    importable extension modules, and would hide an installed kafka_net's).  Run from an empty folder, so that no
    checkout is on the workers' path."""
    compiled = compiled_modules()
    names = ["kafka_net", "kafka_net.spark_jobs.check_columns", *compiled]
    # local mode, sent the archive as a cluster's executors are (else its workers
    # import this installed kafka_net: the test below)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env[session.SHIP_CODE] = "1"
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(names)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    shipped = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(shipped) == sorted(names)
    folders = {f.split(os.sep + "kafka_net" + os.sep)[0] for f in shipped.values()}
    assert len(folders) == 1 and "userFiles" in folders.pop(), shipped
    assert all(shipped[m].endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
               for m in compiled), shipped


def test_local_workers_import_the_drivers_own_installed_package(tmp_path):
    """In local mode the workers run this interpreter from the driver's folder and
    environment: they import the installed kafka_net the driver runs, bytecode
    and all, and nothing is sent (no archive to zip, unpack and compile)."""
    names = ["kafka_net", "kafka_net.spark_jobs.check_columns", *compiled_modules()]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", session.SHIP_CODE)}
    probe = _PROBE.replace("ship_code(spark)\n",
                           "assert ship_code(spark) is None\n"
                           "assert not list(spark.sparkContext.listArchives)\n")
    out = subprocess.run([sys.executable, "-c", probe, json.dumps(names)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    imported = json.loads(out.stdout.strip().splitlines()[-1])
    import kafka_net
    from kafka_net.spark_jobs import check_columns
    assert imported["kafka_net"] == kafka_net.__file__
    assert imported["kafka_net.spark_jobs.check_columns"] == check_columns.__file__


def test_another_kafka_net_ahead_on_the_workers_path_gets_the_archive(tmp_path, monkeypatch):
    """The workers would find another kafka_net first (one in the folder the job
    runs from, which local mode's workers start in): the driver's is sent."""
    assert session._WorkersPackage().is_ours()
    (tmp_path / "kafka_net").mkdir()
    (tmp_path / "kafka_net" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert not session._WorkersPackage().is_ours()


_IMPORT_ALL = """
import importlib, json, os, sys
folder = sys.argv[1]
sys.path.insert(0, folder)
names = json.loads(sys.argv[2])
for name in names:
    importlib.import_module(name)
loaded = {n: getattr(m, "__file__", None) for n, m in sys.modules.items()
          if n.split(".")[0] == "kafka_net"}
print(json.dumps(loaded))
"""


def test_the_shipped_parts_need_no_other_part_of_kafka_net(tmp_path):
    """ship_code sends only the parts of kafka_net the job's tasks import
    (session.JOB_PARTS: the package's __init__, capture, protocol and the job),
    not the broker: a smaller archive for every executor to unpack.  Every
    module in it imports with the archive's kafka_net alone, and nothing of
    kafka_net comes from anywhere else (an installed or checked-out copy would
    hide a missing module here, and fail on a cluster's executor)."""
    import tarfile

    class Context:                       # the one call ship_code makes of it
        def addArchive(self, path):
            self.archive = path

    class Session:
        sparkContext = Context()

    shipped = session.ship_code(Session())
    try:
        folder = tmp_path / "unpacked"
        with tarfile.open(shipped) as tf:
            tf.extractall(folder / "kafka_net", filter="data")
            files = tf.getnames()
    finally:
        session._remove_shipped(id(Session.sparkContext))
    assert Session.sparkContext.archive == shipped + "#kafka_net"
    assert {f.split("/")[0] for f in files} == set(session.JOB_PARTS)
    suffixes = sorted((".py", *importlib.machinery.EXTENSION_SUFFIXES), key=len, reverse=True)
    modules = [f[:-len(next(s for s in suffixes if f.endswith(s)))] for f in files]
    names = sorted(("kafka_net." + m.replace("/", ".")).removesuffix(".__init__")
                   for m in modules)
    assert "kafka_net.spark_jobs.task_reads" in names and \
        not any(n.startswith("kafka_net.server") for n in names)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, str(folder), json.dumps(names)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(names) <= set(loaded)
    elsewhere = {n: f for n, f in loaded.items()
                 if f is not None and not f.startswith(str(folder) + os.sep)}
    assert not elsewhere
