"""A class-data archive for the driver's JVM: Spark's classes read, checked and
laid out once, then mapped from a file by every later session (the JDK's Class
Data Sharing, with a dynamic archive of the application's classes, JEP 350).

Why: a conformance job's JVM spends much of its CPU loading classes.  Spark's
driver loads some fifteen thousand of them, most only when the job reaches them
(SQL planning, Parquet, Arrow), so the loading shows in the job's time, not only
in the session's start.  On the 919,785-frame capture of bench/RESULTS.md a
``local[2]`` job's JVM took 3.5-4.1 CPU s without the archive and 2.0-2.1 s with
it, and the session started in 4 s instead of 8-9.

How it is made.  JDK 17, the Java this project installs, cannot make the archive
by itself when it is missing (``-XX:+AutoCreateSharedArchive`` came in JDK 19):
a JVM started with ``-XX:ArchiveClassesAtExit=FILE`` writes the classes it
loaded into FILE when it exits normally.  So the first session on a machine, for
a given Java and Spark, starts its JVM that way, writing to a temporary name; when
this Python process ends, it ends that JVM as Python's exit would (its standard
input closed: Spark's gateway then calls ``System.exit``), waits for it and,
only if it exited cleanly, renames the file into place.  A reader sees a whole
archive or none.  Every later session starts with ``-XX:SharedArchiveFile``.

- **Keyed by what it was made from**: the JVM (its libjvm's path, size and
  time: a Java update changes them) and Spark (PySpark's version and its jars).
  The JVM checks the rest itself and starts without an archive it cannot use
  (another JVM build, another class path); such an archive is found unmapped
  after the start (/proc/PID/maps) and removed, so the next session writes a
  good one.
- **One writer**: a lock file made exclusively holds the writer's pid; a second
  first session meanwhile runs without an archive; the lock of a process that
  is gone is taken over.
- **Where**: ``$KAFKA_NET_SPARK_CDS_DIR``, else ``$XDG_CACHE_HOME/kafka-net/spark-cds``
  or ``~/.cache/kafka-net/spark-cds``; an archive is about 150 MB.
  ``KAFKA_NET_SPARK_CDS=0`` turns the archive off (nothing is read or written).
- **Only where the job starts the JVM**: under ``spark-submit`` the JVM is running
  before Python starts (pass the options with ``--driver-java-options`` there).
  A cluster's executors are JVMs of their own, started by their workers: those
  of a standalone cluster on loopback (``spark://127.x`` or ``localhost``) map the
  same archive, made from the same Spark; elsewhere the file would not be theirs.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import shutil
import sys
import time
from dataclasses import dataclass

ARCHIVE_SUFFIX = ".jsa"
# The JVM's own messages about the archive (a class it skips while writing, an
# archive it cannot use) go to stdout by default, where the job prints its
# verdict: they are turned off; the job says what it does with the archive.
QUIET = "-Xlog:cds=off,cds+dynamic=off"
# A lock older than this whose process is still alive is a pid reused by another
# program: writing an archive takes seconds.
STALE_LOCK_S = 3600.0
WRITE_WAIT_S = 300.0


@dataclass
class Plan:
    """What the next JVM start does with the archive."""
    options: str            # for spark.driver.extraJavaOptions; "" for nothing
    archive: str | None     # the archive this key has, or will have
    writing: str | None = None   # the temporary file this JVM writes at exit
    lock: str | None = None
    executor_options: str = ""   # for spark.executor.extraJavaOptions


def folder() -> str | None:
    """Where archives are kept, or None when they are turned off."""
    if os.environ.get("KAFKA_NET_SPARK_CDS", "1") == "0":
        return None
    chosen = os.environ.get("KAFKA_NET_SPARK_CDS_DIR")
    if chosen:
        return chosen
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kafka-net", "spark-cds")


def key() -> str | None:
    """A name for this Java and this Spark, or None when there is no Java to name."""
    java = _java()
    if java is None:
        return None
    jvm = os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "server", "libjvm.so")
    made_of = jvm if os.path.exists(jvm) else java
    st = os.stat(made_of)
    import pyspark
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    names = sorted(os.listdir(jars)) if os.path.isdir(jars) else []
    text = "\n".join([made_of, str(st.st_size), str(st.st_mtime_ns), pyspark.__version__,
                      *names])
    return f"spark-{pyspark.__version__}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _java() -> str | None:
    """The java Spark's launcher runs: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def plan(executors_here: bool = False) -> Plan:
    """Use this key's archive, or write it if nobody is, or do without.
    ``executors_here``: the executors are JVMs on this machine, started from the
    same Spark (a standalone cluster on loopback): they map the archive too.  The
    driver maps it first, so a damaged file never reaches them (get_spark starts
    the driver again without it, and them too)."""
    where = folder()
    name = key() if where is not None else None
    if name is None:
        return Plan("", None)
    archive = os.path.join(where, name + ARCHIVE_SUFFIX)
    if os.path.isfile(archive):
        # A damaged archive crashes the JVM as it maps it (SIGBUS): the crash
        # report goes beside the archive, not into the user's folder, and the
        # session starts again without it (session.get_spark).
        crash = os.path.join(where, "hs_err_pid%p.log")
        options = f"-XX:SharedArchiveFile={archive} -XX:ErrorFile={crash} {QUIET}"
        return Plan(options, archive, executor_options=options if executors_here else "")
    try:
        os.makedirs(where, exist_ok=True)
    except OSError:
        return Plan("", None)
    lock = archive + ".lock"
    if not _take(lock):
        return Plan("", archive)            # another session is writing it
    writing = f"{archive}.{os.getpid()}.tmp"
    return Plan(f"-XX:ArchiveClassesAtExit={writing} {QUIET}", archive, writing, lock)


def _take(lock: str) -> bool:
    """Make the lock file, or take over one whose writer is gone."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if not _stale(lock):
                return False
            for left in glob.glob(glob.escape(lock[:-len(".lock")]) + ".*.tmp"):
                _remove(left)          # the gone writer's, whole or not
            _remove(lock)
            continue
        except OSError:
            return False
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()}\n")
        return True
    return False


def _stale(lock: str) -> bool:
    try:
        with open(lock, encoding="ascii") as fh:
            pid = int(fh.read().strip() or 0)
        age = time.time() - os.stat(lock).st_mtime
    except (OSError, ValueError):
        return True
    return age > STALE_LOCK_S or not _alive(pid)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_pending: list[tuple[Plan, object]] = []   # archives this process's JVM will write


def started(chosen: Plan, gateway) -> None:
    """After the JVM started: drop an archive it refused; when this JVM writes
    the archive, finish the file when the session is stopped
    (:func:`finish_pending`) or, at the latest, when this process ends."""
    proc = getattr(gateway, "proc", None)
    if chosen.writing is not None:
        if not _pending:
            atexit.register(finish_pending)
        _pending.append((chosen, proc))
    elif chosen.options and proc is not None and not _mapped(proc.pid, chosen.archive):
        refused(chosen)


def finish_pending() -> None:
    """Finish the archive this process's JVM writes, if any: the JVM ends here,
    and PySpark forgets its gateway, so that a later session starts a new JVM.
    A process that leaves without running its exit handlers (``os._exit``, as
    a pytest-xdist worker does) leaves its temporary file and lock behind; the
    next session that finds the lock's process gone removes both."""
    if not _pending:
        return
    while _pending:
        finish(*_pending.pop())
    from pyspark import SparkContext
    SparkContext._gateway = SparkContext._jvm = None


def refused(chosen: Plan) -> None:
    """The JVM could not use this archive (another Java or Spark build, or a
    damaged file): remove it, so that the next session writes a good one."""
    print(f"kafka-net: the JVM could not use its class-data archive {chosen.archive} "
          f"(the JVM's report, if it crashed: hs_err_pid*.log beside it); removed, the "
          f"next session writes it again", file=sys.stderr)
    _remove(chosen.archive)


def _mapped(pid: int, path: str) -> bool:
    """Whether process pid maps the file (True where /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return any(line.rstrip("\n").endswith(path) for line in fh)
    except OSError:
        return True


def finish(chosen: Plan, proc) -> None:
    """End the JVM as this process's exit would, wait for it to write the archive,
    and put a whole one in place; on any failure leave none."""
    try:
        if proc is not None and proc.poll() is None:
            print("kafka-net: writing the JVM's class-data archive for the next sessions "
                  f"(once): {chosen.archive}", file=sys.stderr)
            if proc.stdin is not None:
                proc.stdin.close()     # Spark's gateway exits on end of input
            proc.wait(WRITE_WAIT_S)
        whole = proc is not None and proc.returncode == 0 and \
            os.path.getsize(chosen.writing) > 0
        if whole:
            os.replace(chosen.writing, chosen.archive)
    except Exception:   # noqa: BLE001 - an archive is an optimisation, never an error
        pass
    finally:
        _remove(chosen.writing)
        _remove(chosen.lock)


def _remove(path: str | None) -> None:
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass
