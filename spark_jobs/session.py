"""The SparkSession the jobs use, and shipping our code to executors.

Local mode is the default: ``local[2]`` unless a master is given or the job
runs under ``spark-submit``, whose ``--master`` then wins.  Spark's INFO
logging and console progress bars are turned down so that the job's own
stage lines stay readable; ``--verbose`` brings them back.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from kafka_net.spark_jobs import class_data
from kafka_net.spark_jobs.without_pandas import WITHOUT_PANDAS

# Where the code the executors need lies: kafka_net's folder and this job's, which
# is spark_jobs/ in a checkout and kafka_net/spark_jobs/ in an installed wheel.
_JOB_DIR = os.path.dirname(os.path.abspath(__file__))


GET_PYSPARK = "pip install 'kafka-net[spark]' (or `make install` in a checkout)"
GET_JAVA = "`make java-check` in a checkout, or apt-get install default-jre-headless"

# What the job imports on driver and executors: PySpark, and the libraries its
# Arrow stages (mapInArrow, applyInArrow) need.
_MODULES = (("pyspark", "PySpark"), ("pyarrow", "pyarrow"), ("pandas", "pandas"))


class MissingRuntime(Exception):
    """Something the job needs is not installed; the message says what and how."""


def check_runtime() -> None:
    """Raise :class:`MissingRuntime` naming PySpark (or its Arrow libraries) or
    a Java runtime when one is missing, before anything tries to start a JVM."""
    missing = [name for module, name in _MODULES if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingRuntime(f"{' and '.join(missing)} not installed in {sys.executable}; "
                             f"install with: {GET_PYSPARK}")
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise MissingRuntime(f"Spark needs a Java runtime, and JAVA_HOME={java_home} has "
                                 f"no bin/java; unset it or point it at a JRE (17 or later); "
                                 f"to install one: {GET_JAVA}")
    elif shutil.which("java") is None:
        raise MissingRuntime("Spark needs a Java runtime (17 or later): no `java` on PATH "
                             f"and JAVA_HOME is not set; install one with: {GET_JAVA}")


def get_spark(master: str | None = None, quiet: bool = True, job_only: bool = False):
    """The session, local unless a master is given or spark-submit runs the job,
    with :func:`settings` (the driver's JVM options have no effect when the JVM
    already runs: under spark-submit pass ``--driver-java-options`` there).

    ``job_only``: the session will run the job's tasks and nothing else (it is
    started in a process of our own, ``kafka_net.entry.OWN_PROCESS``), so its
    Python workers on this machine do without pandas, as that process does
    (:mod:`.without_pandas`)."""
    # Executors must run the same Python as the driver (the project's venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName("kafka-net-conformance")
    under_submit = "spark.master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or \
        os.environ.get("SPARK_ENV_LOADED")
    if master or not under_submit:
        master = master or os.environ.get("KAFKA_NET_SPARK_MASTER", "local[2]")
        builder = builder.master(master)
    conf = settings(quiet)
    probe = None
    if not under_submit and _python_here(master):
        conf["spark.python.daemon.module"] = WORKER_DAEMON
        if job_only:
            conf[f"spark.executorEnv.{WITHOUT_PANDAS}"] = "1"
        if master.startswith("local") and os.environ.get(SHIP_CODE) != "1":
            probe = _WorkersPackage()       # runs while the JVM starts
    # The driver's JVM starts here unless one runs already (spark-submit's, or an
    # earlier session's in this process): then it has its options, archive and all.
    archive = class_data.plan(_executors_here(master)) if _starts_a_jvm() else \
        class_data.Plan("", None)
    try:
        spark = _session(builder, conf, archive)
    except MissingRuntime:
        if not archive.options or archive.writing:
            class_data.finish(archive, None)
            raise
        # A JVM that died on its archive (a damaged file: the JVM's mapping of it
        # fails with SIGBUS) starts again without one, and the file goes.
        class_data.refused(archive)
        archive = class_data.Plan("", None)
        spark = _session(builder, conf, archive)
    class_data.started(archive, spark.sparkContext._gateway)
    if probe is not None and probe.is_ours():
        _shipped[id(spark.sparkContext)] = None      # nothing to send
    spark.sparkContext.setLogLevel("ERROR" if quiet else "INFO")
    return spark


def _session(builder, conf: dict[str, str], archive: class_data.Plan):
    conf = dict(conf)
    for key, more in (("spark.driver.extraJavaOptions", archive.options),
                      ("spark.executor.extraJavaOptions", archive.executor_options)):
        conf[key] = f"{conf[key]} {more}".strip()
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:   # the JVM did not start (PySparkRuntimeError and kin)
        if "JAVA_GATEWAY" not in str(exc) and "Java gateway" not in str(exc):
            raise
        raise MissingRuntime(f"Spark's JVM did not start ({exc}); check the Java runtime "
                             f"(17 or later): {GET_JAVA}") from exc


def stop_spark(spark) -> None:
    """Stop the session, and end its JVM when that JVM is writing the class-data
    archive (spark_jobs/class_data.py): the file is in place when this returns.
    The code :func:`ship_code` sent its executors goes too."""
    sc = spark.sparkContext
    spark.stop()
    _remove_shipped(id(sc))
    class_data.finish_pending()


def _executors_here(master: str | None) -> bool:
    """Whether the executors are JVMs on this machine (a standalone cluster on
    loopback, as bench/ and the tests start one): they can map the driver's
    class-data archive.  Local mode runs them inside the driver's JVM."""
    return bool(master) and master.startswith(("spark://127.", "spark://localhost"))


# The Python workers' daemon for executors on this machine (spark_jobs/worker_daemon.py).
WORKER_DAEMON = "kafka_net.spark_jobs.worker_daemon"


def _python_here(master: str) -> bool:
    """Whether the executors' Python workers run this interpreter, on this machine,
    with kafka-net installed in it: local mode or a loopback cluster, no other
    PYSPARK_PYTHON, and an installed distribution (not a checkout found through the
    driver's own path), so that they can start :data:`WORKER_DAEMON`."""
    from importlib import metadata
    if not (master.startswith("local") or _executors_here(master)) or \
            os.environ.get("PYSPARK_PYTHON") != sys.executable:
        return False
    try:
        metadata.distribution("kafka-net")
    except metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec(WORKER_DAEMON) is not None


def _starts_a_jvm() -> bool:
    from pyspark import SparkContext
    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


# numpy's OpenBLAS starts a thread per core when numpy is imported, and an idle
# one spins (sched_yield) before it sleeps; the job does no linear algebra.  One
# thread: 0.3-0.6 CPU s less of a 919,785-frame .kncap run in one process,
# most of it system time.  A value the user set wins.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1"}


def one_blas_thread() -> None:
    """:data:`ONE_BLAS_THREAD` for this process (before numpy is imported)."""
    for name, value in ONE_BLAS_THREAD.items():
        os.environ.setdefault(name, value)


def settings(quiet: bool = True) -> dict[str, str]:
    """The job's Spark settings, for local mode and a cluster alike.

    * Memory.  Local mode runs the executors in the driver's JVM
      (``spark.driver.memory``, 3g: Spark's 1g ran out with four task slots on
      32 MiB files); on a cluster each executor has its own
      (``spark.executor.memory``, 2g: a standalone executor at Spark's 1g default
      died of OutOfMemoryError, five times in one 1,000,000-frame run).  A task
      holds one byte range of at most 64 MiB (the files are cut,
      kafka_net.capture.capture_split) and its Arrow batches; the Python workers'
      memory is outside these heaps.  ``KAFKA_NET_SPARK_DRIVER_MEMORY`` and
      ``KAFKA_NET_SPARK_EXECUTOR_MEMORY`` override them.
    * Arrow batches of 2,000 rows into the grouped stages
      (``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000 by default): a
      row holds a whole frame (up to capture.max.frame.bytes) or TCP segment, so
      a batch stays tens of MiB, not hundreds.
    * A task's result goes to the driver in the task's status message up to
      64 MiB (``spark.task.maxDirectResultSize``, 1 MiB by default; Spark caps
      it at ``spark.rpc.message.maxSize``, 128 MiB), not through the block
      manager, which the driver then asks for it.  A checking task's result is
      its connections' rows, 0.5-2 MB on the ~1M-frame capture of
      bench/RESULTS.md (each pair's latency, for exact percentiles): the block
      manager's round trip cost a ``local[2]`` job's JVM 0.03-0.24 CPU s more
      (eight pairs) and told the driver of a finished task 0.2 s late.
    * Shuffle partitions (flows, connections): ``KAFKA_NET_SPARK_SHUFFLE_PARTITIONS``,
      8 by default: a few per executor slot of a small cluster, and few enough that
      a small input does not pay for hundreds of empty tasks.
    * The JVM compiles with its quick JIT tier only (``-XX:TieredStopAtLevel=1``):
      the job's JVM time is mostly the optimising compiler working on code that
      runs for seconds to a minute.  JVM CPU seconds with and without
      (bench/RESULTS.md, Spark): 800 frames 12 / 21, 200,000 frames 18 / 30,
      1,000,000 frames 45 / 50-52.  Executors of a cluster get the same.
    * The Python workers get :data:`ONE_BLAS_THREAD` (``spark.executorEnv``).
    """
    env = os.environ.get
    quick_jit = "-XX:TieredStopAtLevel=1"
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false" if quiet else "true",
        "spark.sql.shuffle.partitions": env("KAFKA_NET_SPARK_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
        "spark.driver.memory": env("KAFKA_NET_SPARK_DRIVER_MEMORY", "3g"),
        "spark.executor.memory": env("KAFKA_NET_SPARK_EXECUTOR_MEMORY", "2g"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.task.maxDirectResultSize": "64m",
        "spark.driver.extraJavaOptions": quick_jit,
        "spark.executor.extraJavaOptions": quick_jit,
        **{f"spark.executorEnv.{name}": env(name, value)
           for name, value in ONE_BLAS_THREAD.items()},
    }


# id(SparkContext) -> the archive added to it, or None where its Python workers
# import this process's own kafka_net (:class:`_WorkersPackage`): nothing to send.
_shipped: dict[int, str | None] = {}
# Set to 1, local mode sends the archive too, as to a cluster's executors.
SHIP_CODE = "KAFKA_NET_SPARK_SHIP_CODE"


def _kafka_net_dir() -> str:
    """The folder of the kafka_net this process runs."""
    return os.path.dirname(os.path.abspath(importlib.util.find_spec("kafka_net").origin))


class _WorkersPackage:
    """Which kafka_net a local session's Python workers will import: asked of
    this interpreter in a child process with this one's environment and working
    folder, which is what the workers get (local mode starts them from the
    driver's JVM, which has both from this process).  Started before the JVM,
    read after it is up, so that its start hides the child's.

    When the answer is this process's own package (an installed kafka-net, run
    the usual way), :func:`ship_code` sends nothing: the workers import the
    installed files, with their bytecode.  The archive cost a local ``local[2]``
    job its packing here (0.12-0.17 CPU s), its unpacking before the first
    task, and each worker compiling the 54 modules it imports from it (0.17 CPU
    s a worker; bench/RESULTS.md, Spark).  Any other answer (a checkout put on
    this process's path by hand, another copy ahead on the workers') or no
    answer: the archive, as before."""

    def __init__(self) -> None:
        self.mine = _kafka_net_dir()
        ask = "import importlib.util as u; s = u.find_spec('kafka_net'); print(s and s.origin)"
        try:
            self.child = subprocess.Popen([sys.executable, "-c", ask], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True)
        except OSError:
            self.child = None

    def is_ours(self) -> bool:
        if self.child is None:
            return False
        try:
            answer, _ = self.child.communicate(timeout=30)
        except subprocess.TimeoutExpired:       # no answer in time: send the archive
            self.child.kill()
            self.child.wait()
            return False
        origin = answer.strip()
        return self.child.returncode == 0 and origin not in ("", "None") and \
            os.path.dirname(os.path.abspath(origin)) == self.mine


# The parts of kafka_net the job's tasks import: the package's __init__, the
# capture readers and checks, the protocol, and the job; not the broker (server,
# network, config, security, the CLI), 40% of the archive.  Each executor unpacks
# the archive in the JVM before its first Python worker starts: 1.5 MB and 401
# files took a local[2] job's JVM 0.06-0.17 s more than these 0.9 MB and 175
# files (bench/RESULTS.md, Spark).  tests/spark/test_conformance_runtime.py
# imports every shipped module with the archive's kafka_net alone.
JOB_PARTS = ("__init__.py", "capture", "protocol", "spark_jobs")


def ship_code(spark) -> str | None:
    """Send the job and the parts of kafka_net it imports (:data:`JOB_PARTS`),
    with the compiled fast paths built for this interpreter, to every
    executor, so that a cluster needs nothing installed but Python (the
    driver's version, on the same platform) and PySpark.

    The package goes as an archive that Spark unpacks into a folder named
    ``kafka_net`` (``addArchive``, ``#kafka_net``), not as a zip on the Python
    path (``addPyFile``): Python cannot import a compiled extension module from
    a zip, and a zip's ``kafka_net`` would hide an installed one, compiled
    modules and all.  A gzipped tar, not a zip: Spark unpacks a ``.zip`` with
    Java code in the executor's JVM, still cold at its first task, and a
    ``.tgz`` with Hadoop's ``FileUtil.unTar``, which runs the system's ``gzip``
    and ``tar`` (Java's own only on Windows).  On a loopback cluster of two
    executors the zip cost their task threads 0.87 CPU s and their JIT 0.24 s
    in a ~1M-frame job, the tgz 0.47 and 0.13-0.16 s, no archive 0.39 and 0.08
    (bench/RESULTS.md, Spark).  Executors' Python workers have the folder Spark
    unpacks archives into on their path, ahead of site-packages.  (A folder given to
    ``addFile`` would do in local mode only: Spark refuses a local folder for
    any other master.)

    Once per SparkContext: Spark refuses a second file of the same name with
    other contents, and executors already have the code.  Nothing (None) for a
    local session whose workers import this process's own installed kafka_net
    (:class:`_WorkersPackage`; :data:`SHIP_CODE` sends it anyway)."""
    sc = spark.sparkContext
    if id(sc) in _shipped:
        return _shipped[id(sc)]
    path = os.path.join(tempfile.mkdtemp(prefix="kafka-net-job-"), "kafka_net_job.tgz")
    # Executors import the job as kafka_net.spark_jobs, wherever it lies here
    # (an installed kafka_net holds it already: each name is written once).
    packages = [(_kafka_net_dir(), ""), (_JOB_DIR, "spark_jobs")]
    shipped = (".py", *importlib.machinery.EXTENSION_SUFFIXES)
    written: set[str] = set()
    with tarfile.open(path, "w:gz", compresslevel=6) as tf:
        for folder, arcname in packages:
            for root, _, names in os.walk(folder):
                for name in sorted(names):
                    full = os.path.join(root, name)
                    inside = os.path.join(arcname, os.path.relpath(full, folder))
                    if name.endswith(shipped) and inside not in written and \
                            inside.split(os.sep)[0] in JOB_PARTS:
                        tf.add(full, inside, recursive=False)
                        written.add(inside)
    _shipped[id(sc)] = path
    sc.addArchive(path + "#kafka_net")
    return path


def _remove_shipped(context_id: int) -> None:
    """The archive of a stopped SparkContext and its folder: executors fetch it from the
    driver while the context lives (every run of the job left one under /tmp)."""
    path = _shipped.pop(context_id, None)
    if path is not None:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


@atexit.register
def _remove_all_shipped() -> None:
    """The archives of sessions never stopped, when the process ends."""
    for context_id in list(_shipped):
        _remove_shipped(context_id)
