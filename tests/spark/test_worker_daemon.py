"""What the executors' Python workers run on (kafka_net.spark_jobs.worker_daemon
and session.ship_code): the installed, byte-compiled pyspark and py4j in front
of the source zips Spark puts first on the workers' path, only where the zips
are those packages' own; the job's code shipped for a session and removed with it;
no pandas in the workers of the command's own session."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest

from kafka_net.spark_jobs import session, without_pandas
from kafka_net.spark_jobs.worker_daemon import _py4j_version, installed_first

PY4J = metadata.version("py4j")


def _package(root, name: str, version: str | None = None) -> str:
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "__init__.py"), "w") as fh:
        fh.write("")
    if version is not None:        # as py4j says its own: py4j/version.py
        with open(os.path.join(root, name, "version.py"), "w") as fh:
            fh.write(f"__version__ = {version!r}\n")
    return str(root)


def _zip(path) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    zipfile.ZipFile(path, "w").close()
    return str(path)


def test_the_installed_packages_own_zips_go_to_the_end(tmp_path):
    site = _package(tmp_path / "site", "pyspark")
    _package(tmp_path / "site", "py4j", PY4J)
    own = _zip(tmp_path / "site" / "pyspark" / "python" / "lib" / "pyspark.zip")
    own_py4j = _zip(tmp_path / "site" / "pyspark" / "python" / "lib" / f"py4j-{PY4J}-src.zip")
    other = _zip(tmp_path / "other.zip")
    path = ["/cwd", own, own_py4j, other, site]
    assert installed_first(path) == ["/cwd", other, site, own, own_py4j]


def test_zips_of_another_spark_or_py4j_keep_their_place(tmp_path):
    site = _package(tmp_path / "site", "pyspark")
    _package(tmp_path / "site", "py4j", PY4J)
    # SPARK_HOME of another Spark: its pyspark speaks its own JVM's protocol
    foreign = _zip(tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip")
    older_py4j = _zip(tmp_path / "spark-home" / "python" / "lib" / "py4j-0.0.1-src.zip")
    path = [foreign, older_py4j, site]
    assert installed_first(path) == path


def test_the_installed_py4j_says_its_version_without_being_imported(tmp_path):
    """The daemon reads py4j's version from the py4j package itself (not
    importlib.metadata, a quarter of its start): the installed one says what
    its distribution says, and a py4j with no version module moves nothing."""
    import py4j
    site = os.path.dirname(os.path.dirname(py4j.__file__))
    assert _py4j_version([site]) == PY4J
    bare = _package(tmp_path / "bare", "py4j")
    assert _py4j_version([bare]) is None
    own_py4j = _zip(tmp_path / "bare" / "lib" / f"py4j-{PY4J}-src.zip")
    assert installed_first([own_py4j, bare]) == [own_py4j, bare]


def test_nothing_moves_where_no_pyspark_is_installed(tmp_path):
    own = _zip(tmp_path / "site" / "pyspark" / "python" / "lib" / "pyspark.zip")
    py4j = _zip(tmp_path / "lib" / f"py4j-{PY4J}-src.zip")
    path = [own, py4j, str(tmp_path / "empty")]
    assert installed_first(path) == path


def _ready_daemon(env: dict[str, str]):
    """The worker daemon started as an executor starts it, once it is ready
    (it has written its port)."""
    import pyspark
    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", *env)},
           "PYTHONPATH": os.pathsep.join([os.path.join(lib, "pyspark.zip"),
                                          os.path.join(lib, f"py4j-{PY4J}-src.zip")]),
           "PYTHON_WORKER_FACTORY_SECRET": "test", **env}
    daemon = subprocess.Popen([sys.executable, "-m", session.WORKER_DAEMON],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert len(daemon.stdout.read(4)) == 4, daemon.wait()
    return daemon


def _threads_and_libraries(pid: int) -> tuple[int, str]:
    with open(f"/proc/{pid}/maps", encoding="utf-8") as fh:
        return len(os.listdir(f"/proc/{pid}/task")), fh.read()


@pytest.mark.parametrize("blas, preloaded", [("1", True), ("4", False)])
def test_the_daemon_imports_numpy_and_pyarrow_for_its_workers_in_one_thread(blas, preloaded):
    """With the executors' one BLAS thread the daemon imports numpy and pyarrow
    before it forks the workers, and is still one thread when it is ready
    (pyarrow's jemalloc thread turned off); with more BLAS threads it leaves
    them to the workers, as before."""
    daemon = _ready_daemon({"OPENBLAS_NUM_THREADS": blas})
    try:
        threads, maps = _threads_and_libraries(daemon.pid)
    finally:
        daemon.kill()
        daemon.wait()
    assert threads == 1
    assert ("libarrow" in maps) is preloaded and ("numpy" in maps) is preloaded


def test_spark_workers_import_the_installed_pyspark_and_the_shipped_kafka_net(spark):
    """The session of the tests (local mode) runs its workers under the daemon:
    pyspark from site-packages, not from the zip, and kafka_net as without it
    (from the path Spark gives the workers: the shipped code comes first)."""
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == \
        session.WORKER_DAEMON

    def where(_):
        import pyspark
        import kafka_net
        return pyspark.__file__, kafka_net.__file__, sys.path

    pyspark_file, kafka_net_file, path = spark.sparkContext.parallelize([0], 1) \
        .map(where).collect()[0]
    assert ".zip" not in pyspark_file
    assert pyspark_file == sys.modules["pyspark"].__file__
    # the worker's kafka_net is the first one on its path, as pyspark.daemon gives it
    first = next(entry for entry in path
                 if os.path.isfile(os.path.join(entry, "kafka_net", "__init__.py")))
    assert kafka_net_file == os.path.join(first, "kafka_net", "__init__.py")


def test_remote_executors_and_other_pythons_keep_pysparks_daemon(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert session._python_here("local[2]")
    assert session._python_here("spark://127.0.0.1:7077")
    assert not session._python_here("spark://cluster.example:7077")
    assert not session._python_here("yarn")
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    assert not session._python_here("local[2]")


def test_the_shipped_code_goes_with_its_session(tmp_path):
    """ship_code's zip (under a temporary folder) is removed by stop_spark, and at
    the process's exit for a session never stopped: each run of the job left one
    behind."""
    program = """if True:
        import os, sys
        from kafka_net.spark_jobs.session import get_spark, ship_code, stop_spark
        spark = get_spark("local[1]")
        first = ship_code(spark)
        print(os.path.exists(first))
        stop_spark(spark)
        print(os.path.exists(os.path.dirname(first)))
        spark = get_spark("local[1]")
        print(os.path.dirname(ship_code(spark)))   # never stopped
    """
    # local mode sends the archive only when asked (else its workers import this
    # installed kafka_net), as a cluster's session always does
    env = {**os.environ, "TMPDIR": str(tmp_path), "KAFKA_NET_SPARK_CDS": "0",
           session.SHIP_CODE: "1"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    shipped, removed, second = done.stdout.split()
    assert (shipped, removed) == ("True", "False")
    assert second.startswith(str(tmp_path)) and not os.path.exists(second)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("kafka-net-job-")]


def test_the_workers_and_the_driver_start_one_blas_thread(spark, monkeypatch):
    """numpy's OpenBLAS threads spin when idle; the job does no linear algebra.
    The executors' Python workers get OPENBLAS_NUM_THREADS=1 from the session,
    a run in this process sets it before numpy loads, and a value the user set
    stays."""
    got = spark.sparkContext.parallelize([0], 1).map(
        lambda _: os.environ.get("OPENBLAS_NUM_THREADS")).collect()
    assert got == ["1"]
    assert session.settings()["spark.executorEnv.OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert session.settings()["spark.executorEnv.OPENBLAS_NUM_THREADS"] == "3"
    session.one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    script = ("import os, sys, tempfile\n"
              "from kafka_net.spark_jobs import conformance\n"
              "conformance.run(None, [], tempfile.mkdtemp())\n"
              "assert os.environ['OPENBLAS_NUM_THREADS'] == '1'\n"
              "assert 'numpy' in sys.modules\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)


def _one_pair_capture(tmp_path) -> str:
    """A .kncap segment of one ApiVersions request and its answer."""
    from tests.spark.conftest import (
        REQUEST, RESPONSE, kncap_file, kncap_record, request_payload, response_payload)
    return kncap_file(tmp_path / "kafka-net-1-p0-000000.kncap", [
        kncap_record(REQUEST, request_payload(18, 3, 7, {"client_software_name": "t",
                                                         "client_software_version": "1"}),
                     "c1", 1_000),
        kncap_record(RESPONSE, response_payload(18, 3, 7), "c1", 2_000)])


def test_the_command_checking_in_one_process_never_imports_pandas(tmp_path):
    """pyarrow would import pandas (a quarter of a second) only to ask whether a
    value is a pandas object: the ``kafka-net conformance`` process that runs no
    Spark refuses it (without_pandas.arrow_without_pandas) and still reports PASS; a
    caller's process (kafka_net.cli.main called here) keeps pandas importable."""
    from kafka_net.cli import main as cli_main
    capture = _one_pair_capture(tmp_path)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kafka_net", "conformance", capture,
         "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")]
    # a refused import is listed too, but pandas itself imports its submodules
    assert "pyarrow" in imported and "pandas" in imported
    assert not [name for name in imported if name.startswith("pandas.")]
    assert cli_main(["conformance", capture, "--out", str(tmp_path / "here")]) == 0
    assert not [f for f in sys.meta_path if isinstance(f, without_pandas.Refused)]


# The job in a process that says whether it is the command's own, then a probe on
# the same session's Python workers: does pyarrow's question import pandas there?
WORKERS_PROBE = """if True:
    import sys
    from kafka_net import entry
    entry.OWN_PROCESS = {own}
    from kafka_net.spark_jobs import conformance
    code = conformance.main([{capture!r}, "--out", {out!r}, "--in-process-below-mb", "0",
                             "--master", "local[1]"])
    from pyspark.sql import SparkSession
    sc = SparkSession.builder.getOrCreate().sparkContext

    def probe(_):
        import sys
        import pyarrow as pa
        pa.array([1, 2])    # is this a pandas object? pyarrow asks pandas, if it can
        return "pandas" in sys.modules
    print(code, sc.parallelize([0], 1).map(probe).collect()[0])
"""


@pytest.mark.parametrize("own", [True, False], ids=["own process", "a caller's process"])
def test_the_workers_of_the_commands_own_session_never_import_pandas(tmp_path, own):
    """The session ``kafka-net conformance`` starts in its own process runs the
    job alone, so its Python workers refuse pandas (session.get_spark's
    job_only), as that process does; the job on it still reports PASS.  A
    session started from a caller's process keeps pandas for its workers."""
    capture = _one_pair_capture(tmp_path)
    program = WORKERS_PROBE.format(own=own, capture=str(capture), out=str(tmp_path / "out"))
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "PASS" in done.stdout
    assert done.stdout.splitlines()[-1] == f"0 {not own}"
