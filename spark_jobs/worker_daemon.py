"""PySpark's daemon for the Python workers, importing the installed pyspark and
py4j instead of the source zips Spark puts first on the workers' path.

An executor starts its Python workers from a daemon, ``python -m
pyspark.daemon``, each worker a fork of it.  Spark gives that process a
PYTHONPATH that begins with ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's
source zip.  Python writes no bytecode cache for modules imported from a zip,
so every daemon compiled pyspark's sources anew, and every worker compiled the
modules it imported after the fork: 0.8 CPU s a daemon and 0.3 s a worker, for
a job of a few seconds (measured on the 2-core machine of bench/RESULTS.md).

When those zips are the installed packages' own (SPARK_HOME is the
pip-installed pyspark, as for this project: the zip lies inside the package
that the rest of the path holds, and py4j's zip is named for the installed
py4j's version) they are moved to the end of the path before pyspark is
imported, so the same code comes from the installed, byte-compiled files.
Any other zip (a SPARK_HOME of another Spark) keeps its place: its pyspark is
the one that speaks its JVM's protocol.

The daemon is ``pyspark.daemon.manager`` itself, and it starts no thread
before it forks (its own rule).  Before it forks, for every worker:

* it imports numpy and pyarrow (:func:`preload`, where that starts no
  thread), which each worker imported after its fork;
* in a session that runs the job alone (``without_pandas.WITHOUT_PANDAS`` in
  its environment, ``session.get_spark``'s ``job_only``) it refuses pandas:
  pyarrow imports pandas (0.25 CPU s a worker) only to ask whether a value is
  a pandas object, and the job's stages never hand it one
  (:mod:`.without_pandas`).

What the daemon imports before it is ready delays each job's first task
(``python -m bench.daemon_start``): it takes neither importlib.metadata nor
the session's module.

``session.get_spark`` names this module as ``spark.python.daemon.module`` only
for executors on this machine, whose Python has kafka-net installed; a remote
executor's Python may have only PySpark.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from importlib import machinery, util


def installed_first(path: list[str]) -> list[str]:
    """``path`` with the zips that duplicate an installed pyspark or py4j moved to
    its end (in their order); everything else as it was."""
    others = [entry for entry in path if not entry.endswith(".zip")]
    moved = [entry for entry in path if _installed_copy(entry, others)]
    return [entry for entry in path if entry not in moved] + moved


def _installed_copy(entry: str, others: list[str]) -> bool:
    """Whether ``entry`` is pyspark's or py4j's source zip of a package that
    ``others`` (the path without zips) holds, at the same version."""
    name = os.path.basename(entry)
    if name == "pyspark.zip":
        spec = machinery.PathFinder.find_spec("pyspark", others)
        # the pip package carries its own zip: <site>/pyspark/python/lib/pyspark.zip
        return spec is not None and spec.origin is not None and \
            os.path.dirname(os.path.abspath(entry)) == \
            os.path.join(os.path.dirname(spec.origin), "python", "lib")
    version = re.fullmatch(r"py4j-(.+)-src\.zip", name)
    return version is not None and _py4j_version(others) == version.group(1)


def _py4j_version(others: list[str]) -> str | None:
    """The version of the py4j that ``others`` holds, from its own
    ``py4j.version`` module, run without importing py4j (whose zip is still
    first on the path); None where there is none.  Not importlib.metadata:
    importing it took a quarter of this daemon's start, before any task runs."""
    spec = machinery.PathFinder.find_spec("py4j", others)
    if spec is None or not spec.submodule_search_locations:
        return None
    found = machinery.PathFinder.find_spec("py4j.version",
                                           list(spec.submodule_search_locations))
    if found is None or found.loader is None:
        return None
    module = util.module_from_spec(found)
    found.loader.exec_module(module)
    return getattr(module, "__version__", None)


# What every worker of the job imports from numpy and pyarrow, 0.12 CPU s a
# worker after its fork: imported in the daemon instead, once for all of them.
PRELOADED = ("numpy", "pyarrow", "pyarrow.compute", "pyarrow.parquet")
# pyarrow's jemalloc starts its background purging thread when pyarrow is
# imported; this turns it off.  The job's memory comes from pyarrow's default
# pool (mimalloc), so jemalloc's thread had nothing to purge.
NO_JEMALLOC_THREAD = {"JE_ARROW_MALLOC_CONF": "background_thread:false"}


def preload() -> None:
    """Import :data:`PRELOADED` here, where that starts no thread: the daemon
    forks its workers, and a fork copies only the forking thread (a lock
    another one held stays held in the child).  numpy's OpenBLAS starts no
    thread when ``OPENBLAS_NUM_THREADS`` is 1 (the executors' setting,
    ``session.ONE_BLAS_THREAD``) and pyarrow none under
    :data:`NO_JEMALLOC_THREAD`.  Where the user set either otherwise, the
    workers import them after their fork, as before."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" or \
            any(name in os.environ for name in NO_JEMALLOC_THREAD):
        return
    os.environ.update(NO_JEMALLOC_THREAD)
    for name in PRELOADED:
        importlib.import_module(name)


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from kafka_net.spark_jobs import without_pandas
    if os.environ.get(without_pandas.WITHOUT_PANDAS) == "1":
        without_pandas.arrow_without_pandas()
    # The workers find kafka_net on the path Spark gives them (the code the driver
    # shipped first), as under pyspark.daemon: forget the packages this module came in.
    for name in [n for n in sys.modules if n.split(".")[0] == "kafka_net"]:
        del sys.modules[name]
    preload()
    from pyspark.daemon import manager
    manager()
