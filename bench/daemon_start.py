"""How long the Spark job's Python worker daemon takes to be ready, outside Spark.

``python -m bench.daemon_start [--runs 20]``

An executor starts ``python -m kafka_net.spark_jobs.worker_daemon`` (session.py's
``spark.python.daemon.module``) when the job's first task needs a Python worker,
and forks the workers from it once it is ready: it has written the port it
listens on to its stdout.  So whatever the daemon does before that delays every
job's first task, on every executor.  This starts the daemon as the executor
does (PySpark's own source zips first on PYTHONPATH, the executors' one BLAS
thread, and the refusal of pandas a ``kafka-net conformance`` session asks
for), times each start to the first bytes of its stdout, and stops it.  (The
daemon imports numpy and pyarrow for its workers, ``worker_daemon.preload``:
that time is each worker's less.)  Printed: the median and the least of
``--runs`` starts, in seconds, and the load average before them.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time


def executor_env() -> dict[str, str]:
    """The environment a local executor gives the daemon: PySpark's zips first
    on the path, and the session's refusal of pandas."""
    import pyspark
    from kafka_net.spark_jobs.session import ONE_BLAS_THREAD
    from kafka_net.spark_jobs.without_pandas import WITHOUT_PANDAS
    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    zips = [os.path.join(lib, "pyspark.zip"), *sorted(glob.glob(os.path.join(lib, "py4j-*.zip")))]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join(zips), PYTHON_WORKER_FACTORY_SECRET="bench",
               **{WITHOUT_PANDAS: "1"},
               **{name: os.environ.get(name, value) for name, value in ONE_BLAS_THREAD.items()})
    return env


def start_seconds(env: dict[str, str]) -> float:
    """One daemon's start to its first bytes on stdout (its port)."""
    t0 = time.perf_counter()
    daemon = subprocess.Popen([sys.executable, "-m", "kafka_net.spark_jobs.worker_daemon"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        if len(daemon.stdout.read(4)) != 4:
            raise SystemExit(f"the daemon exited ({daemon.wait()}) before it was ready")
        return time.perf_counter() - t0
    finally:
        daemon.kill()
        daemon.wait()
        daemon.stdout.close()
        daemon.stdin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.daemon_start",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    env = executor_env()
    load = os.getloadavg()[0]
    times = [start_seconds(env) for _ in range(args.runs)]
    print(f"worker daemon ready: median {statistics.median(times):.3f} s, "
          f"least {min(times):.3f} s, {args.runs} starts; load average {load:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
